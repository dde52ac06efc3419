package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Batches/DispatchWritesQueuetyRows", testBatchDispatchRows)
	register("Batches/CallbacksExactlyOnceConcurrent", testBatchCallbacksConcurrent)
	register("Batches/AllowFailures", testBatchAllowFailures)
	register("Batches/CatchOnFirstFailure", testBatchCatch)
	register("Batches/Progress", testBatchProgress)
	register("Batches/Cancel", testBatchCancel)
	register("Batches/ForeignTransitionsSwept", testBatchForeign)
	register("Batches/PHPBridge", testBatchPHPBridge)
	register("Batches/Prune", testBatchPrune)
	register("Chains/RunInOrder", testChainOrder)
	register("Chains/StopAtFailure", testChainStops)
}

// callbackLog records the batch callbacks a worker ran.
type callbackLog struct {
	mu    sync.Mutex
	calls []string // "<name>:<event>"
	last  map[string]*queuety.Batch
}

func (l *callbackLog) register(w *worker.Worker, names ...string) {
	for _, name := range names {
		w.HandleBatchCallback(name, func(_ context.Context, b *queuety.Batch) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.calls = append(l.calls, name+":"+b.Event)
			if l.last == nil {
				l.last = map[string]*queuety.Batch{}
			}
			l.last[name] = b
			return nil
		})
	}
}

func (l *callbackLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (l *callbackLog) batch(name string) *queuety.Batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[name]
}

// batchJobs returns n jobs of handler with payloads {"n": i}.
func batchJobs(handler string, from, n int, opts ...queuety.JobOption) []queuety.JobRequest {
	out := make([]queuety.JobRequest, n)
	for i := range out {
		out[i] = queuety.JobRequest{Handler: handler, Payload: queuety.State{"n": from + i}, Options: opts}
	}
	return out
}

func (e *Env) batch(id int64) *queuety.Batch {
	e.T.Helper()
	b, err := e.C.Batch(e.Ctx, id)
	require.NoErrorf(e.T, err, "read batch %d", id)
	return b
}

func (e *Env) batchEvents(id int64) map[string]*driver.BatchEvent {
	e.T.Helper()
	evs, err := e.C.BatchEvents(e.Ctx, id)
	require.NoError(e.T, err, "batch events")
	out := map[string]*driver.BatchEvent{}
	for _, ev := range evs {
		out[ev.Event] = ev
	}
	return out
}

func (e *Env) rawBatch(id int64) *driver.Batch {
	e.T.Helper()
	var b *driver.Batch
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { b, err = tx.BatchGet(e.Ctx, id, driver.LockNone); return err }))
	return b
}

func testBatchDispatchRows(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(append(batchJobs("import_row", 1, 2), queuety.JobRequest{Handler: "import_row",
		Payload: queuety.State{"n": 3}, Options: []queuety.JobOption{queuety.OnQueue("other"), queuety.MaxAttempts(1)}})...).
		Name("import").OnQueue("imports").Then(`App\Done`).Catch(`App\Failed`).Finally(`App\Cleanup`).AllowFailures().Dispatch(e.Ctx)
	require.NoError(t, err)
	b := e.rawBatch(id)
	assert.Equal(t, "import", b.Name, "name")
	assert.Equal(t, 3, b.TotalJobs, "total_jobs")
	assert.Equal(t, 3, b.PendingJobs, "pending_jobs")
	assert.Equal(t, 0, b.FailedJobs, "failed_jobs")
	assert.Equal(t, "[]", string(b.FailedJobIDs), "failed_job_ids")
	assert.Equal(t, `{"then":"App\\Done","catch":"App\\Failed","finally":"App\\Cleanup","allow_failures":true}`, string(b.Options), "options")
	assert.Equal(t, Epoch, b.CreatedAt, "created_at")
	assert.True(t, b.FinishedAt.IsZero() && b.CancelledAt.IsZero(), "finished_at and cancelled_at NULL")
	jobs := e.Jobs(driver.JobFilter{Handler: "import_row"})
	require.Len(t, jobs, 3, "jobs")
	for i, j := range jobs {
		assert.Equal(t, id, j.BatchID, "job %d batch_id", i)
		assert.Greater(t, j.ID, id-1, "job ids follow the batch's insert")
		assert.Equal(t, fmt.Sprintf(`{"n":%d}`, i+1), string(j.Payload), "payload %d", i)
	}
	assert.Equal(t, []string{"imports", "imports", "other"}, []string{jobs[0].Queue, jobs[1].Queue, jobs[2].Queue}, "queues")
	assert.Equal(t, []int{3, 3, 1}, []int{jobs[0].MaxAttempts, jobs[1].MaxAttempts, jobs[2].MaxAttempts}, "max attempts")

	plain, err := e.C.NewBatch(batchJobs("import_row", 9, 1)...).Dispatch(e.Ctx)
	require.NoError(t, err)
	b = e.rawBatch(plain)
	assert.Equal(t, "", b.Name, "name NULL")
	assert.Equal(t, "[]", string(b.Options), "options of a batch without callbacks (PHP's empty array)")

	_, err = e.C.NewBatch().Dispatch(e.Ctx)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "empty batch")
	_, err = e.C.NewBatch(queuety.JobRequest{Handler: "h", Options: []queuety.JobOption{queuety.Unique()}}).Dispatch(e.Ctx)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "unique job in a batch")
	_, err = e.C.Batch(e.Ctx, 999)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "missing batch")
}

// doneWhenIdle reports whether the batch finished and no job of the
// default queue is pending or processing.
func doneWhenIdle(batchID int64) func(c *queuety.Client) bool {
	return func(c *queuety.Client) bool {
		b, err := c.Batch(context.Background(), batchID)
		if err != nil || !b.Finished() {
			return false
		}
		counts, err := c.Counts(context.Background())
		if err != nil {
			return false
		}
		for _, qc := range counts {
			if qc.Status == queuetytype.JobPending || qc.Status == queuetytype.JobProcessing {
				return false
			}
		}
		return true
	}
}

func testBatchCallbacksConcurrent(t *testing.T, e *Env) {
	const n = 200
	id, err := e.C.NewBatch(batchJobs("import_row", 1, n)...).Then("import_done").Catch("import_failed").Finally("import_cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	var ran [n + 1]atomic.Int64
	log := &callbackLog{}
	clients := e.Clients(8)
	workers := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		w := e.Worker(c, worker.Concurrency(4))
		w.HandleJob("import_row", func(_ context.Context, p queuety.Payload) error {
			k, _ := p.Int("n")
			ran[k].Add(1)
			return nil
		})
		log.register(w, "import_done", "import_failed", "import_cleanup")
		workers[i] = w
	}
	e.drainUntil(workers, clients, doneWhenIdle(id))
	for k := 1; k <= n; k++ {
		assert.Equalf(t, int64(1), ran[k].Load(), "runs of job %d", k)
	}
	assert.ElementsMatch(t, []string{"import_done:then", "import_cleanup:finally"}, log.all(), "callbacks, each once")
	b := e.batch(id)
	assert.Equal(t, 0, b.PendingJobs, "pending_jobs")
	assert.Equal(t, 0, b.FailedJobs, "failed_jobs")
	assert.Equal(t, 100, b.Progress(), "progress")
	assert.True(t, b.Finished(), "finished")
	got := log.batch("import_done")
	require.NotNil(t, got, "then callback's batch")
	assert.Equal(t, id, got.ID, "batch id the callback saw")
	assert.Equal(t, n, got.TotalJobs, "total the callback saw")
	assert.Equal(t, 0, got.PendingJobs, "pending the callback saw")
	assert.Equal(t, "import_done", got.Options.Then, "options the callback saw")
	assert.False(t, got.FinishedAt.IsZero(), "finished_at the callback saw")
	evs := e.batchEvents(id)
	assert.Len(t, evs, 2, "event rows")
	for _, ev := range []string{"then", "finally"} {
		require.Contains(t, evs, ev)
		assert.Equal(t, "go", evs[ev].Runtime, "%s runtime", ev)
		j := e.Job(evs[ev].JobID)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "%s callback job", ev)
		assert.Equal(t, 1, j.Attempts, "%s callback job ran once", ev)
		assert.Equal(t, 3, j.MaxAttempts, "%s callback job max_attempts (for a worker that dies running it)", ev)
	}
}

func testBatchAllowFailures(t *testing.T, e *Env) {
	jobs := batchJobs("import_row", 1, 6)
	id, err := e.C.NewBatch(jobs...).Then("done").Catch("failed").Finally("cleanup").AllowFailures().Dispatch(e.Ctx)
	require.NoError(t, err)
	log := &callbackLog{}
	w := e.Worker(nil, worker.Concurrency(1))
	var failedIDs []int64
	var mu sync.Mutex
	w.HandleJob("import_row", func(ctx context.Context, p queuety.Payload) error {
		if k, _ := p.Int("n"); k%3 == 0 {
			info, _ := queuety.JobInfoFrom(ctx)
			mu.Lock()
			failedIDs = append(failedIDs, info.JobID)
			mu.Unlock()
			return queuety.NonRetryable(errors.New("bad row"))
		}
		return nil
	})
	log.register(w, "done", "failed", "cleanup")
	e.Drain(w)
	assert.Equal(t, []string{"failed:catch", "done:then", "cleanup:finally"}, log.all(), "callbacks in order (one worker)")
	b := e.batch(id)
	assert.Equal(t, 2, b.FailedJobs, "failed_jobs")
	assert.Equal(t, failedIDs, b.FailedJobIDs, "failed_job_ids, in burial order")
	assert.Equal(t, 0, b.PendingJobs, "pending_jobs")
	assert.True(t, b.HasFailures(), "has failures")
	assert.True(t, b.Options.AllowFailures, "allow failures read back")
	raw := e.rawBatch(id)
	assert.Equal(t, fmt.Sprintf("[%d,%d]", failedIDs[0], failedIDs[1]), string(raw.FailedJobIDs), "failed_job_ids as stored")
	assert.Equal(t, []int64{failedIDs[0], failedIDs[1]}, log.batch("done").FailedJobIDs, "then saw the failures")
}

func testBatchCatch(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(batchJobs("import_row", 1, 3)...).Then("done").Catch("failed").Finally("cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	first := e.ClaimOne("import_row")
	require.NoError(t, e.Fail(first[0], queuety.NonRetryable(errors.New("boom"))))
	// The catch callback is enqueued by the burial itself, before the
	// batch ends, on the failed job's queue.
	catch := e.OneJob(driver.JobFilter{Handler: "failed"})
	assert.Equal(t, queuetytype.JobPending, catch.Status, "catch job")
	assert.Equal(t, "default", catch.Queue, "catch job queue")
	b := e.batch(id)
	assert.Equal(t, []int64{first[0].Job.ID}, b.FailedJobIDs, "failed_job_ids")
	assert.Equal(t, 2, b.PendingJobs, "pending_jobs")
	assert.False(t, b.Finished(), "finished after one failure")

	log := &callbackLog{}
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleJob("import_row", func(context.Context, queuety.Payload) error { return nil })
	log.register(w, "done", "failed", "cleanup")
	e.Drain(w)
	assert.Equal(t, []string{"failed:catch", "cleanup:finally"}, log.all(), "callbacks: catch and finally, no then")
	assert.Equal(t, 2, log.batch("failed").PendingJobs, "catch saw the batch right after the first failure")
	b = e.batch(id)
	assert.True(t, b.Finished(), "finished")
	assert.Equal(t, 1, b.FailedJobs, "failed_jobs")
	assert.Empty(t, e.Jobs(driver.JobFilter{Handler: "done"}), "then never enqueued")
}

func testBatchProgress(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(batchJobs("import_row", 1, 3)...).Name("p").Dispatch(e.Ctx)
	require.NoError(t, err)
	b := e.batch(id)
	assert.Equal(t, 0, b.Progress(), "progress at dispatch")
	jobs := e.Claim(2, "import_row")
	require.Len(t, jobs, 2)
	e.completeAll(jobs[:1], jobs[0].Job.ID)
	require.NoError(t, e.Fail(jobs[1], queuety.NonRetryable(errors.New("x"))))
	b = e.batch(id)
	assert.Equal(t, 3, b.TotalJobs, "total")
	assert.Equal(t, 1, b.PendingJobs, "pending")
	assert.Equal(t, 1, b.FailedJobs, "failed")
	assert.Equal(t, 66, b.Progress(), "progress (rounded down)")
	assert.False(t, b.Finished(), "finished")
	assert.Equal(t, "p", b.Name, "name")
	list, err := e.C.ListBatches(e.Ctx, driver.BatchFilter{Unfinished: true})
	require.NoError(t, err)
	require.Len(t, list, 1, "unfinished batches")
	assert.Equal(t, id, list[0].ID)
	counts, err := e.C.BatchJobCounts(e.Ctx, id)
	require.NoError(t, err)
	assert.ElementsMatch(t, []driver.QueueCount{{Queue: "default", Status: queuetytype.JobBuried, Count: 1},
		{Queue: "default", Status: queuetytype.JobCompleted, Count: 1}, {Queue: "default", Status: queuetytype.JobPending, Count: 1}}, counts, "job counts")
	// A completion reported twice for the same job (a replayed result) is
	// fenced off and does not count twice.
	assert.ErrorIs(t, e.Complete(jobs[0])[0], queuetytype.ErrStaleAttempt, "second completion")
	assert.Equal(t, 1, e.batch(id).PendingJobs, "pending after a stale completion")
}

func testBatchCancel(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(batchJobs("import_row", 1, 3)...).Then("done").Finally("cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	e.completeAll(e.Claim(1, "import_row"), e.Jobs(driver.JobFilter{Handler: "import_row"})[0].ID)
	e.Clock.Advance(time.Minute)
	require.NoError(t, e.C.CancelBatch(e.Ctx, id))
	require.NoError(t, e.C.CancelBatch(e.Ctx, id), "cancelling again")
	b := e.batch(id)
	assert.True(t, b.Cancelled(), "cancelled")
	assert.Equal(t, Epoch.Add(time.Minute), b.CancelledAt, "cancelled_at")
	assert.Equal(t, b.CancelledAt, b.FinishedAt, "finished_at")
	assert.Equal(t, 2, b.PendingJobs, "pending_jobs left as they were")
	assert.Len(t, e.Jobs(driver.JobFilter{Handler: "cleanup"}), 1, "finally enqueued once")

	log := &callbackLog{}
	var ran atomic.Int64
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleJob("import_row", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	log.register(w, "done", "cleanup")
	e.Drain(w)
	assert.Equal(t, int64(2), ran.Load(), "the cancelled batch's pending jobs still ran (as in Queuety)")
	assert.Equal(t, []string{"cleanup:cancel"}, log.all(), "callbacks")
	assert.True(t, log.batch("cleanup").Cancelled(), "finally saw the cancelled batch")
	b = e.batch(id)
	assert.Equal(t, 2, b.PendingJobs, "pending_jobs after the rest ran")
	assert.Equal(t, Epoch.Add(time.Minute), b.FinishedAt, "finished_at unchanged")
	assert.ErrorIs(t, e.C.CancelBatch(e.Ctx, 999), queuetytype.ErrNotFound, "missing batch")
}

// phpFinishes applies what Queuety PHP's record_completion does when its
// worker completes the batch's last job: the row only, no event row, no
// callback job.
func (e *Env) phpFinishes(id int64, failed ...int64) {
	e.T.Helper()
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		b, err := tx.BatchGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		b.PendingJobs, b.FailedJobs, b.FinishedAt = 0, len(failed), e.Clock.Now()
		if len(failed) > 0 {
			b.FailedJobIDs = workflowstate.EncodeJSON(failed)
		}
		return tx.BatchUpdate(e.Ctx, b)
	}))
}

func testBatchForeign(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(batchJobs("php_job", 1, 2)...).Then("done").Catch(`App\PHPOnly`).Finally("cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	e.phpFinishes(id, 5)
	// Four Go processes sweep at once; only "done" and "cleanup" are Go
	// callbacks they run. The catch is a PHP class: Queuety PHP ran it.
	clients := e.Clients(4)
	var wg sync.WaitGroup
	var total atomic.Int64
	// The engines know the workers' callbacks only while the workers are
	// alive (they hold them weakly): keep them to the end of the test.
	var workers []*worker.Worker
	defer func() { runtime.KeepAlive(workers) }()
	for _, c := range clients {
		w := e.Worker(c)
		workers = append(workers, w)
		(&callbackLog{}).register(w, "done", "cleanup")
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := deadline.New(c).BatchCallbacks(e.Ctx)
			assert.NoError(t, err)
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	// With one failure and no allow_failures, then is not due: only finally.
	assert.Equal(t, int64(1), total.Load(), "callbacks enqueued by all sweepers")
	cleanup := e.OneJob(driver.JobFilter{Handler: "cleanup"})
	assert.Contains(t, string(cleanup.Payload), `"event":"finally"`, "callback job payload")
	assert.Empty(t, e.Jobs(driver.JobFilter{Handler: `App\PHPOnly`}), "PHP catch class not enqueued")
	evs := e.batchEvents(id)
	assert.Contains(t, evs, "finally", "finally recorded")
	assert.NotContains(t, evs, "catch", "catch left to PHP within the handoff")

	// After the handoff the PHP catch is recorded as left, and a cancel
	// by PHP later fires the Go finally again (as PHP's cancel does).
	e.Clock.Advance(queuetytype.DefaultDeadlineHandoff + time.Second)
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		b, err := tx.BatchGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		b.CancelledAt = e.Clock.Now()
		return tx.BatchUpdate(e.Ctx, b)
	}))
	n, err := deadline.New(clients[0]).BatchCallbacks(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "callbacks enqueued after PHP's cancel")
	evs = e.batchEvents(id)
	assert.Equal(t, "", evs["catch"].Runtime, "catch recorded as left to PHP")
	assert.Equal(t, `App\PHPOnly`, evs["catch"].Callback, "catch callback name")
	assert.Equal(t, "go", evs["cancel"].Runtime, "cancel runtime")
	assert.Len(t, e.Jobs(driver.JobFilter{Handler: "cleanup"}), 2, "finally jobs: end and cancel")
	n, err = deadline.New(clients[1]).BatchCallbacks(e.Ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a later sweep finds nothing")
}

func testBatchPHPBridge(t *testing.T, e *Env) {
	c := e.Client(queuety.WithPHPBatchCallbacks("php"))
	id, err := c.NewBatch(batchJobs("import_row", 1, 2)...).Then(`App\Done`).Catch("go_failed").Finally(`App\Cleanup`).Dispatch(e.Ctx)
	require.NoError(t, err)
	chain, err := c.Chain(batchJobs("chain_step", 1, 2)...).Catch(`App\ChainFailed`).DispatchIDs(e.Ctx)
	require.NoError(t, err)
	w := e.Worker(c, worker.Concurrency(1))
	var fails atomic.Int64
	w.HandleJob("import_row", func(_ context.Context, p queuety.Payload) error {
		if k, _ := p.Int("n"); k == 2 {
			fails.Add(1)
			return queuety.NonRetryable(errors.New("row 2"))
		}
		return nil
	})
	w.HandleJob("chain_step", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("chain broke")) })
	log := &callbackLog{}
	log.register(w, "go_failed")
	e.Drain(w)
	assert.Equal(t, []string{"go_failed:catch"}, log.all(), "the Go catch ran in Go")
	bridge := e.Jobs(driver.JobFilter{Queue: "php"})
	require.Len(t, bridge, 2, "jobs for Queuety PHP's bridge class")
	if strings.Contains(string(bridge[0].Payload), "chain_catch") { // the order the two were recorded in varies
		bridge[0], bridge[1] = bridge[1], bridge[0]
	}
	for _, j := range bridge {
		assert.Equal(t, batch.HandlerPHPCallback, j.Handler, "bridge job handler")
		assert.Equal(t, queuetytype.JobPending, j.Status, "bridge job status")
		assert.Equal(t, 3, j.MaxAttempts, "bridge job max_attempts (for a worker that dies running it)")
	}
	raw := e.rawBatch(id)
	assert.Equal(t, fmt.Sprintf(`{"batch_id":%d,"type":"finally","callback":"App\\Cleanup","batch":{"id":%d,"name":null,"total_jobs":2,`+
		`"pending_jobs":0,"failed_jobs":1,"failed_job_ids":"[%d]","options":%q,"cancelled_at":null,"created_at":"2030-01-02 03:04:05",`+
		`"finished_at":"2030-01-02 03:04:05"},"__queuety_runtime":{"max_attempts":3,"backoff":[0]}}`, id, id, e.Jobs(driver.JobFilter{Handler: "import_row"})[1].ID, raw.Options),
		string(bridge[0].Payload), "finally handed to PHP with the row as PDO reads it (then is not due: a job failed)")
	assert.Equal(t, fmt.Sprintf(`{"chain_catch":"App\\ChainFailed","job_id":%d,"error_message":"chain broke","__queuety_runtime":{"max_attempts":3,"backoff":[0]}}`, chain[0]),
		string(bridge[1].Payload), "chain catch handed to PHP")
	evs := e.batchEvents(id)
	assert.Equal(t, "go", evs["catch"].Runtime, "catch runtime")
	assert.Equal(t, "php", evs["finally"].Runtime, "finally runtime")
	assert.Equal(t, bridge[0].ID, evs["finally"].JobID, "finally job")
}

func testBatchPrune(t *testing.T, e *Env) {
	done, err := e.C.NewBatch(batchJobs("import_row", 1, 1)...).Then("t").Dispatch(e.Ctx)
	require.NoError(t, err)
	open, err := e.C.NewBatch(batchJobs("import_row", 2, 1)...).Dispatch(e.Ctx)
	require.NoError(t, err)
	e.completeAll(e.Claim(1, "import_row"), e.Jobs(driver.JobFilter{Handler: "import_row"})[0].ID)
	require.Len(t, e.batchEvents(done), 2, "event rows before the prune")
	e.Clock.Advance(48 * time.Hour)
	n, err := e.C.PruneBatches(e.Ctx, 24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "batches pruned")
	_, err = e.C.Batch(e.Ctx, done)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "pruned batch")
	assert.Empty(t, e.batchEvents(done), "event rows of the pruned batch")
	_ = e.batch(open)
}

func testChainOrder(t *testing.T, e *Env) {
	const n = 6
	ids, err := e.C.Chain(batchJobs("step", 1, n)...).OnQueue("pipeline").DispatchIDs(e.Ctx)
	require.NoError(t, err)
	first, err := e.C.Chain(batchJobs("other", 1, 1)...).Dispatch(e.Ctx)
	require.NoError(t, err)
	require.Len(t, ids, n)
	for i, id := range ids {
		j := e.Job(id)
		assert.Equal(t, "pipeline", j.Queue, "job %d queue", i)
		if i == 0 {
			assert.Zero(t, j.DependsOn, "first job depends on nothing")
		} else {
			assert.Equal(t, ids[i-1], j.DependsOn, "job %d depends_on", i)
		}
		assert.Equal(t, fmt.Sprintf(`{"n":%d}`, i+1), string(j.Payload), "job %d payload (no catch: no __chain_catch)", i)
	}
	assert.Equal(t, int64(0), e.Job(first).DependsOn, "a one-job chain")

	var mu sync.Mutex
	var order []int64
	clients := e.Clients(4)
	workers := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		w := e.Worker(c, worker.Queues("pipeline"), worker.Concurrency(4))
		w.HandleJob("step", func(_ context.Context, p queuety.Payload) error {
			k, _ := p.Int("n")
			mu.Lock()
			order = append(order, k)
			mu.Unlock()
			return nil
		})
		workers[i] = w
	}
	e.drainUntil(workers, clients, func(c *queuety.Client) bool {
		j, err := c.Job(context.Background(), ids[n-1])
		return err == nil && j.Status == queuetytype.JobCompleted
	})
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, order, "chain order")
}

func testChainStops(t *testing.T, e *Env) {
	ids, err := e.C.Chain(batchJobs("step", 1, 3)...).Catch("chain_failed").DispatchIDs(e.Ctx)
	require.NoError(t, err)
	for i, id := range ids {
		assert.Equal(t, fmt.Sprintf(`{"n":%d,"__chain_catch":"chain_failed"}`, i+1), string(e.Job(id).Payload), "payload %d", i)
	}
	var caught []queuety.ChainFailure
	var mu sync.Mutex
	var ran atomic.Int64
	w := e.Worker(nil)
	w.HandleJob("step", func(_ context.Context, p queuety.Payload) error {
		ran.Add(1)
		assert.NotContains(t, p, "__chain_catch", "handlers do not see __chain_catch")
		if k, _ := p.Int("n"); k == 2 {
			return queuety.NonRetryable(errors.New("step 2 broke"))
		}
		return nil
	})
	w.HandleChainCatch("chain_failed", func(_ context.Context, f queuety.ChainFailure) error {
		mu.Lock()
		defer mu.Unlock()
		caught = append(caught, f)
		return nil
	})
	e.Drain(w)
	e.Drain(w)
	assert.Equal(t, int64(2), ran.Load(), "jobs run")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(ids[0]).Status, "first")
	assert.Equal(t, queuetytype.JobBuried, e.Job(ids[1]).Status, "second")
	third := e.Job(ids[2])
	assert.Equal(t, queuetytype.JobPending, third.Status, "third stays pending for good")
	assert.Equal(t, 0, third.Attempts, "third never ran")
	require.Len(t, caught, 1, "catch calls")
	assert.Equal(t, queuety.ChainFailure{JobID: ids[1], Handler: "step", Queue: "default", Payload: queuety.Payload{"n": int64(2)},
		Error: "step 2 broke"}, caught[0], "what the catch handler got")
}
