package storetest

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Transactional enqueue, Unique in DispatchMany and sync dispatch.
func init() {
	register("DispatchTx/RollbackLeavesNothing", testDispatchTxRollback)
	register("DispatchTx/CommitIsClaimedAndRun", testDispatchTxCommit)
	register("DispatchTx/InvisibleUntilCommit", testDispatchTxInvisible)
	register("DispatchTx/WorkflowIdempotencyKeyInTx", testDispatchTxIdempotency)
	register("DispatchTx/RejectsNilTx", testDispatchTxNil)
	register("Jobs/DispatchManyUnique", testDispatchManyUnique)
	register("Sync/RunsHandlerWritesNothing", testDispatchSync)
}

// beginTx begins a transaction on the client's own pool.
func (e *Env) beginTx() *sql.Tx {
	e.T.Helper()
	db := e.C.DB()
	require.NotNil(e.T, db, "Client.DB")
	tx, err := db.BeginTx(e.Ctx, nil)
	require.NoError(e.T, err, "begin")
	return tx
}

// table is a table's name under the client's prefix ("jobs" → "wp_queuety_jobs").
func (e *Env) table(short string) string {
	return clientseam.StoreOf(e.C).Info().Prefix + "queuety_" + short
}

// countRows counts the rows of a table as q (a transaction or the pool)
// sees them.
func (e *Env) countRows(q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, short string) int {
	e.T.Helper()
	var n int
	require.NoError(e.T, q.QueryRowContext(e.Ctx, "SELECT COUNT(*) FROM "+e.table(short)).Scan(&n), "count %s", short)
	return n
}

// dispatchAllTx writes one of every transactional dispatch in tx: a job,
// a unique job, a batch and a two-step workflow with an idempotency key.
func (e *Env) dispatchAllTx(tx *sql.Tx) (jobIDs []int64, wfID int64) {
	e.T.Helper()
	id, err := e.C.DispatchTx(e.Ctx, tx, "tx_job", queuety.State{"n": 1})
	require.NoError(e.T, err, "DispatchTx")
	u, err := e.C.DispatchTx(e.Ctx, tx, "tx_job", queuety.State{"n": 2}, queuety.Unique())
	require.NoError(e.T, err, "DispatchTx unique")
	again, err := e.C.DispatchTx(e.Ctx, tx, "tx_job", queuety.State{"n": 2}, queuety.Unique())
	require.NoError(e.T, err, "DispatchTx unique again")
	assert.Equal(e.T, u, again, "a unique job the transaction wrote is found by the same transaction")
	many, err := e.C.DispatchManyTx(e.Ctx, tx, []queuety.JobRequest{
		{Handler: "tx_job", Payload: queuety.State{"n": 3}}, {Handler: "tx_job", Payload: queuety.State{"n": 4}}})
	require.NoError(e.T, err, "DispatchManyTx")
	wfID, err = builder.Workflow("tx_flow").Then("tx_step").Then("tx_step").IdempotencyKey("order-42").
		DispatchTx(e.Ctx, e.C, tx, queuety.State{"order": 42})
	require.NoError(e.T, err, "Builder.DispatchTx")
	require.NotZero(e.T, wfID, "workflow id")
	return append([]int64{id, u}, many...), wfID
}

func testDispatchTxRollback(t *testing.T, e *Env) {
	tx := e.beginTx()
	ids, _ := e.dispatchAllTx(tx)
	for _, id := range ids {
		assert.NotZero(t, id, "job id inside the transaction")
	}
	assert.Equal(t, 5, e.countRows(tx, "jobs"), "jobs the transaction sees: 4 jobs and the first step")
	assert.Equal(t, 1, e.countRows(tx, "workflows"), "workflows the transaction sees")
	require.NoError(t, tx.Rollback())

	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs after rollback")
	assert.Empty(t, e.Workflows(driver.WorkflowFilter{}), "workflows after rollback")
	assert.Empty(t, e.Logs(driver.LogFilter{}), "logs after rollback")
	assert.Zero(t, e.countRows(e.C.DB(), "workflow_dispatch_keys"), "idempotency keys after rollback")
	// The key was never stored: dispatching with it starts a new workflow.
	wf, err := builder.Workflow("tx_flow").Then("tx_step").IdempotencyKey("order-42").Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	assert.Len(t, e.Workflows(driver.WorkflowFilter{}), 1, "workflows")
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(wf).Status, "new workflow")
}

func testDispatchTxCommit(t *testing.T, e *Env) {
	tx := e.beginTx()
	ids, wfID := e.dispatchAllTx(tx)
	require.NoError(t, tx.Commit())

	w := e.Worker(nil)
	var mu sync.Mutex
	var got []int64
	w.HandleJob("tx_job", func(_ context.Context, p queuety.Payload) error {
		n, _ := p.Int("n")
		mu.Lock()
		defer mu.Unlock()
		got = append(got, n)
		return nil
	})
	w.HandleStep("tx_step", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("steps")
		return queuety.State{"steps": n + 1}, nil
	})
	e.Drain(w)
	assert.ElementsMatch(t, []int64{1, 2, 3, 4}, got, "payloads run")
	for _, id := range ids {
		assert.Equal(t, queuetytype.JobCompleted, e.Job(id).Status, "job %d", id)
	}
	wf := e.Workflow(wfID)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow")
	assert.Equal(t, queuety.State{"order": int64(42), "steps": int64(2)}, e.State(wfID), "state")
	assert.Equal(t, []string{"workflow_started"}, e.Events(driver.LogFilter{WorkflowID: wfID, Event: driver.LogWorkflowStarted}), "started log")
	// The committed key is stored: the same key returns the workflow.
	again, err := builder.Workflow("tx_flow").Then("tx_step").IdempotencyKey("order-42").Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	assert.Equal(t, wfID, again, "idempotency key committed with the workflow")
}

func testDispatchTxInvisible(t *testing.T, e *Env) {
	if e.H.SerialWriters {
		t.Skip("a store with one writer at a time makes other transactions wait for the commit instead")
	}
	other := e.Client()
	tx := e.beginTx()
	id, err := e.C.DispatchTx(e.Ctx, tx, "tx_job", nil)
	require.NoError(t, err)
	assert.Empty(t, e.ClaimFrom(other, []string{queuetytype.DefaultQueue}, 10, "tx_job"), "claim before commit")
	require.NoError(t, tx.Commit())
	jobs := e.ClaimFrom(other, []string{queuetytype.DefaultQueue}, 10, "tx_job")
	require.Len(t, jobs, 1, "claim after commit")
	assert.Equal(t, id, jobs[0].Job.ID, "claimed job")
}

func testDispatchTxIdempotency(t *testing.T, e *Env) {
	committed, err := builder.Workflow("keyed").Then("s").IdempotencyKey("k1").Dispatch(e.Ctx, e.C, nil)
	require.NoError(t, err)
	tx := e.beginTx()
	defer tx.Rollback() //nolint:errcheck // the test commits
	got, err := builder.Workflow("keyed").Then("s").IdempotencyKey("k1").DispatchTx(e.Ctx, e.C, tx, nil)
	require.NoError(t, err)
	assert.Equal(t, committed, got, "a key committed before returns its workflow")
	first, err := builder.Workflow("keyed").Then("s").IdempotencyKey("k2").DispatchTx(e.Ctx, e.C, tx, nil)
	require.NoError(t, err)
	second, err := builder.Workflow("keyed").Then("s").IdempotencyKey("k2").DispatchTx(e.Ctx, e.C, tx, nil)
	require.NoError(t, err)
	assert.Equal(t, first, second, "a key stored earlier in the same transaction")
	require.NoError(t, tx.Commit())
	assert.Len(t, e.Workflows(driver.WorkflowFilter{Name: "keyed"}), 2, "workflows")
}

func testDispatchTxNil(t *testing.T, e *Env) {
	_, err := e.C.DispatchTx(e.Ctx, nil, "h", nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "DispatchTx(nil)")
	_, err = e.C.DispatchManyTx(e.Ctx, nil, []queuety.JobRequest{{Handler: "h"}})
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "DispatchManyTx(nil)")
	_, err = builder.Workflow("w").Then("s").DispatchTx(e.Ctx, e.C, nil, nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "Builder.DispatchTx(nil)")
	tx := e.beginTx()
	_, err = e.C.DispatchTx(e.Ctx, tx, "", nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "empty handler")
	require.NoError(t, tx.Rollback())
	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs")
}

func testDispatchManyUnique(t *testing.T, e *Env) {
	existing := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	plain := e.Dispatch("report", queuety.State{"day": "sun"}) // not unique: no payload_hash
	u := []queuety.JobOption{queuety.Unique()}
	ids, err := e.C.DispatchMany(e.Ctx, []queuety.JobRequest{
		{Handler: "report", Payload: queuety.State{"day": "mon"}, Options: u}, // 0: the existing job
		{Handler: "report", Payload: queuety.State{"day": "tue"}, Options: u}, // 1: new
		{Handler: "report", Payload: queuety.State{"day": "tue"}},             // 2: new, not unique
		{Handler: "report", Payload: queuety.State{"day": "tue"}, Options: u}, // 3: item 1
		{Handler: "other", Payload: queuety.State{"day": "tue"}, Options: u},  // 4: new, other handler
		{Handler: "report", Payload: queuety.State{"day": "sun"}, Options: u}, // 5: new (the plain job has no hash)
		{Handler: "report", Payload: queuety.State{"day": "mon"}, Options: u}, // 6: the existing job
	})
	require.NoError(t, err)
	require.Len(t, ids, 7)
	assert.Equal(t, existing, ids[0], "duplicate of a pending job")
	assert.Equal(t, ids[1], ids[3], "duplicate within the batch")
	assert.Equal(t, existing, ids[6], "second duplicate of a pending job")
	fresh := []int64{ids[1], ids[2], ids[4], ids[5]}
	for i, id := range fresh {
		assert.NotContains(t, []int64{existing, plain}, id, "new job %d", i)
		for _, other := range fresh[i+1:] {
			assert.NotEqual(t, id, other, "new jobs are distinct")
		}
	}
	assert.Len(t, e.Jobs(driver.JobFilter{}), 6, "rows: 2 before, 4 new")
	assert.Equal(t, sha256Hex(`{"day":"tue"}`), e.Job(ids[1]).PayloadHash, "payload_hash of a unique batch item")
	assert.Empty(t, e.Job(ids[2]).PayloadHash, "payload_hash of a plain batch item")

	// A processing job counts; a completed one does not.
	e.completeAll(e.Claim(1, "other"), ids[4])
	claimed := e.ClaimFrom(e.C, []string{queuetytype.DefaultQueue}, 1, "report")
	require.Len(t, claimed, 1)
	assert.Equal(t, existing, claimed[0].Job.ID, "claimed the oldest report")
	again, err := e.C.DispatchMany(e.Ctx, []queuety.JobRequest{
		{Handler: "report", Payload: queuety.State{"day": "mon"}, Options: u},
		{Handler: "other", Payload: queuety.State{"day": "tue"}, Options: u}})
	require.NoError(t, err)
	assert.Equal(t, existing, again[0], "duplicate of a processing job")
	assert.NotEqual(t, ids[4], again[1], "a completed job is no duplicate")

	// The same in a caller's transaction.
	tx := e.beginTx()
	inTx, err := e.C.DispatchManyTx(e.Ctx, tx, []queuety.JobRequest{
		{Handler: "report", Payload: queuety.State{"day": "wed"}, Options: u},
		{Handler: "report", Payload: queuety.State{"day": "wed"}, Options: u},
		{Handler: "report", Payload: queuety.State{"day": "tue"}, Options: u}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	assert.Equal(t, inTx[0], inTx[1], "duplicate within a transactional batch")
	assert.Equal(t, ids[1], inTx[2], "duplicate of a pending job, in a transaction")
}

func testDispatchSync(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	var got queuety.Payload
	var hadAttempt bool
	reg.HandleJob("sync_job", func(ctx context.Context, p queuety.Payload) error {
		got = p
		_, hadAttempt = queuety.JobInfoFrom(ctx)
		if p.Bool("fail") {
			return errors.New("sync failure")
		}
		return nil
	})
	var deadlineRan bool
	reg.HandleDeadline("sync_cb", func(context.Context, queuety.State) error { deadlineRan = true; return nil })
	reg.HandleStep("sync_step", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })

	w := e.Worker(nil, worker.WithRegistry(reg))
	require.NoError(t, w.DispatchSync(e.Ctx, "sync_job", map[string]any{"n": 7, "tags": []string{"a"}, "nested": map[string]any{"x": 1.5}}))
	assert.Equal(t, queuety.Payload{"n": int64(7), "tags": []any{"a"}, "nested": map[string]any{"x": 1.5}}, got,
		"payload as a worker would decode it")
	assert.False(t, hadAttempt, "JobInfoFrom in a sync handler")
	require.NoError(t, reg.DispatchSync(e.Ctx, "sync_cb", nil))
	assert.True(t, deadlineRan, "callbacks run too")

	err := reg.DispatchSync(e.Ctx, "sync_job", queuety.State{"fail": true})
	assert.EqualError(t, err, "sync failure", "the handler's error, as it is")
	err = reg.DispatchSync(e.Ctx, "missing", nil)
	var nf *queuetytype.HandlerNotFoundError
	require.ErrorAs(t, err, &nf)
	assert.EqualError(t, err, "Handler not found: missing", "Queuety's message")
	assert.ErrorIs(t, reg.DispatchSync(e.Ctx, "sync_step", nil), queuetytype.ErrInvalidArgument, "a step handler")
	assert.ErrorIs(t, reg.DispatchSync(e.Ctx, "sync_job", queuety.State{"__queuety_runtime": 1}), queuetytype.ErrInvalidArgument, "reserved key")
	assert.ErrorIs(t, reg.DispatchSync(e.Ctx, "sync_job", []int{1}), queuetytype.ErrInvalidArgument, "a list payload")

	// Queuety's dispatch_sync writes no rows at all.
	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs")
	assert.Empty(t, e.Logs(driver.LogFilter{}), "logs")
	assert.Empty(t, e.Workflows(driver.WorkflowFilter{}), "workflows")
}
