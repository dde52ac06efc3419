package advance

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// openStore returns a store on freshly migrated tables and a Service on
// a fake core over it.
func openStore(t *testing.T) (driver.Store, *Service) {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	st, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, service(&fakeCore{store: st})
}

// waiting inserts a workflow waiting at a wait_for_signal step (step 0)
// for "paid", matched on the order id, with a single step after it.
func waiting(t *testing.T, st driver.Store) int64 {
	t.Helper()
	state := `{"order":7,"_queue":"default","_steps":[
		{"type":"wait_for_signal","name":"pay","signal_names":["paid"],"correlation_key":"order","result_key":"payment"},
		{"type":"single","name":"ship","class":"Ship"}]}`
	wf := &driver.Workflow{Name: "wf", Status: driver.WorkflowWaitingForSignal, State: []byte(state), TotalSteps: 2,
		StartedAt: now, RunNumber: 1, RunStartedAt: now}
	require.NoError(t, st.InTx(context.Background(), func(tx driver.Tx) error { return tx.WorkflowInsert(context.Background(), wf) }))
	return wf.ID
}

func workflowRow(t *testing.T, st driver.Store, id int64) (*driver.Workflow, []*driver.Job) {
	t.Helper()
	var wf *driver.Workflow
	var jobs []*driver.Job
	require.NoError(t, st.InTx(context.Background(), func(tx driver.Tx) (err error) {
		if wf, err = tx.WorkflowGet(context.Background(), id, driver.LockNone); err != nil {
			return err
		}
		jobs, err = tx.JobListByWorkflow(context.Background(), id, []driver.JobStatus{driver.JobPending}, driver.LockNone)
		return err
	}))
	return wf, jobs
}

// A signal for another correlation value is stored and changes nothing;
// the matching one settles the wait in its transaction: the payload is
// merged under the result key and the next step's job is enqueued.
func TestSignalSettlesOnlyAMatchingWait(t *testing.T) {
	st, s := openStore(t)
	id := waiting(t, st)
	ctx := context.Background()

	require.NoError(t, s.Signal(ctx, id, "paid", map[string]any{"order": 8, "amount": 1}))
	wf, jobs := workflowRow(t, st, id)
	assert.Equal(t, driver.WorkflowWaitingForSignal, wf.Status, "another order's payment does not settle the wait")
	assert.Empty(t, jobs)

	require.NoError(t, s.Signal(ctx, id, "paid", map[string]any{"order": 7, "amount": 5}))
	wf, jobs = workflowRow(t, st, id)
	assert.Equal(t, driver.WorkflowRunning, wf.Status)
	assert.Equal(t, 1, wf.CurrentStep)
	require.Len(t, jobs, 1)
	assert.Equal(t, "Ship", jobs[0].Handler)
	state, err := workflowstate.DecodeObject("state", wf.State)
	require.NoError(t, err)
	payment, _ := state.Get("payment")
	assert.JSONEq(t, `{"order":7,"amount":5}`, string(workflowstate.EncodeJSON(payment)))
	_, waits := state.Get("_wait")
	assert.False(t, waits, "the wait is cleared")
}

// An answer goes only to a wait in progress: a workflow that is not
// waiting stores nothing and says why.
func TestAnswerNeedsAWaitInProgress(t *testing.T) {
	st, s := openStore(t)
	id := waiting(t, st)
	ctx := context.Background()
	require.NoError(t, s.Signal(ctx, id, "paid", map[string]any{"order": 7}))
	_, err := s.Answer(ctx, id, "approve", nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidState)
}
