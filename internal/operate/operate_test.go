package operate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2031, 4, 5, 6, 7, 0, 0, time.UTC)

// calls records which engine transitions the operator actions ran.
type calls struct {
	mu           sync.Mutex
	enqueued     []int    // step indexes EnqueueStep was given
	buriedOpen   []string // BuryOpenJobs messages
	buried       []int64  // jobs BuryJob buried
	stepBuried   []int64  // jobs StepJobBuried was given
	callbacks    []string // EnqueueCallback keys
	terminal     int      // AfterTerminal calls
	requeued     []int64  // jobs RequeueJob was given
	compensating bool     // what StartCompensation reports
}

func (c *calls) add(f func()) { c.mu.Lock(); f(); c.mu.Unlock() }

// open returns a store on freshly migrated tables and a Service whose
// engine transitions only record that they ran (BuryJob and RequeueJob
// also write the row, so the pages of a bulk action move on).
func open(t *testing.T) (driver.Store, *operate.Service, *calls) {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c := &calls{}
	svc := operate.New(s, operate.Config{
		Clock: fixedClock{now},
		LockWorkflow: func(ctx context.Context, id int64, fn operate.Locked) error {
			return s.InTx(ctx, func(tx driver.Tx) error {
				wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
				if err != nil {
					return err
				}
				state, err := workflowstate.DecodeObject("workflow state", wf.State)
				if err != nil {
					return err
				}
				steps, err := workflowdef.Parse(state)
				if err != nil {
					return err
				}
				return fn(tx, wf, state, steps, now)
			})
		},
		EnqueueStep: func(_ context.Context, _ driver.Tx, _ *driver.Workflow, _ *phpjson.Object, _ []*workflowdef.Step, idx int, _ time.Time) error {
			c.add(func() { c.enqueued = append(c.enqueued, idx) })
			return nil
		},
		BuryJob: func(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, _ time.Time) error {
			c.add(func() { c.buried = append(c.buried, j.ID) })
			j.Status, j.ErrorMessage = driver.JobBuried, msg
			return tx.JobUpdate(ctx, j)
		},
		BuryOpenJobs: func(_ context.Context, _ driver.Tx, _, _ int64, msg string, _ time.Time) error {
			c.add(func() { c.buriedOpen = append(c.buriedOpen, msg) })
			return nil
		},
		StartCompensation: func(context.Context, driver.Tx, *driver.Workflow, *phpjson.Object, time.Time) (bool, error) {
			return c.compensating, nil
		},
		AfterTerminal: func(context.Context, driver.Tx, *driver.Workflow, *phpjson.Object, time.Time) error {
			c.add(func() { c.terminal++ })
			return nil
		},
		StepJobBuried: func(_ context.Context, _ driver.Tx, _ *driver.Workflow, j *driver.Job, _ string, _ time.Time) error {
			c.add(func() { c.stepBuried = append(c.stepBuried, j.ID) })
			return nil
		},
		EnqueueCallback: func(_ context.Context, _ driver.Tx, _ *driver.Workflow, _ *phpjson.Object, key, _ string, _ time.Time) error {
			c.add(func() { c.callbacks = append(c.callbacks, key) })
			return nil
		},
		RequeueJob: func(ctx context.Context, tx driver.Tx, j *driver.Job, _ time.Time) error {
			c.add(func() { c.requeued = append(c.requeued, j.ID) })
			j.Status = driver.JobPending
			return tx.JobUpdate(ctx, j)
		},
		StartRun:     func(wf *driver.Workflow, _ *phpjson.Object, now time.Time) { wf.RunStartedAt = now },
		ClearAttempt: func(j *driver.Job) { j.StartToCloseAt = time.Time{} },
	})
	return s, svc, c
}

const threeSteps = `{"x":0,"_queue":"default","_steps":[{"type":"single","class":"A"},{"type":"single","class":"B"},{"type":"single","class":"C"}]}`

// workflow inserts a workflow of threeSteps at step with status.
func workflow(t *testing.T, s driver.Store, status driver.WorkflowStatus, step int) int64 {
	t.Helper()
	wf := &driver.Workflow{Name: "wf", Status: status, State: []byte(threeSteps), CurrentStep: step, TotalSteps: 3,
		StartedAt: now, RunNumber: 1, RunStartedAt: now}
	require.NoError(t, s.InTx(context.Background(), func(tx driver.Tx) error { return tx.WorkflowInsert(context.Background(), wf) }))
	return wf.ID
}

// job inserts a job; wfID 0 makes a plain job.
func job(t *testing.T, s driver.Store, status driver.JobStatus, wfID int64, step int) int64 {
	t.Helper()
	j := &driver.Job{Queue: "default", Handler: "h", Payload: []byte(`[]`), Status: status, MaxAttempts: 3,
		AvailableAt: now, CreatedAt: now, WorkflowID: wfID}
	if wfID != 0 {
		j.StepIndex = &step
	}
	require.NoError(t, s.InTx(context.Background(), func(tx driver.Tx) error { return tx.JobInsert(context.Background(), []*driver.Job{j}) }))
	return j.ID
}

func getWorkflow(t *testing.T, s driver.Store, id int64) *driver.Workflow {
	t.Helper()
	var wf *driver.Workflow
	require.NoError(t, s.InTx(context.Background(), func(tx driver.Tx) (err error) {
		wf, err = tx.WorkflowGet(context.Background(), id, driver.LockNone)
		return err
	}))
	return wf
}

func getJob(t *testing.T, s driver.Store, id int64) *driver.Job {
	t.Helper()
	var j *driver.Job
	require.NoError(t, s.InTx(context.Background(), func(tx driver.Tx) (err error) {
		j, err = tx.JobGet(context.Background(), id, driver.LockNone)
		return err
	}))
	return j
}

// A resume enqueues the current step only when no open job runs it, so
// resuming never runs a step twice.
func TestPauseResumeEnqueuesOnlyAMissingStep(t *testing.T) {
	ctx := context.Background()
	s, svc, c := open(t)
	id := workflow(t, s, driver.WorkflowRunning, 1)
	inFlight := job(t, s, driver.JobPending, id, 1)

	require.NoError(t, svc.PauseWorkflow(ctx, id))
	assert.Equal(t, driver.WorkflowPaused, getWorkflow(t, s, id).Status)
	assert.ErrorIs(t, svc.PauseWorkflow(ctx, id), queuetytype.ErrInvalidState, "pausing a paused workflow")

	require.NoError(t, svc.ResumeWorkflow(ctx, id))
	assert.Equal(t, driver.WorkflowRunning, getWorkflow(t, s, id).Status)
	assert.Empty(t, c.enqueued, "the step's job is still pending")

	require.NoError(t, svc.PauseWorkflow(ctx, id))
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error { return tx.JobDelete(ctx, inFlight) }))
	require.NoError(t, svc.ResumeWorkflow(ctx, id))
	assert.Equal(t, []int{1}, c.enqueued, "no job runs step 1: resume enqueues it")
	assert.ErrorIs(t, svc.ResumeWorkflow(ctx, id), queuetytype.ErrInvalidState, "resuming a running workflow")
}

// A cancel buries the open jobs, writes the cancelled failure, runs what
// follows the end, and enqueues the cancel callback unless compensations
// run first.
func TestCancelRunsCallbackAfterCompensations(t *testing.T) {
	ctx := context.Background()
	s, svc, c := open(t)
	id := workflow(t, s, driver.WorkflowRunning, 0)
	require.NoError(t, svc.CancelWorkflow(ctx, id))
	wf := getWorkflow(t, s, id)
	assert.Equal(t, driver.WorkflowCancelled, wf.Status)
	assert.Equal(t, now, wf.CompletedAt)
	assert.Equal(t, []string{"Workflow cancelled"}, c.buriedOpen)
	assert.Equal(t, []string{"_on_cancel"}, c.callbacks)
	assert.Equal(t, 1, c.terminal)
	var failures []*driver.Failure
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) { failures, err = tx.FailureList(ctx, id, 0); return err }))
	require.Len(t, failures, 1)
	assert.Equal(t, driver.FailureCancelled, failures[0].Category)
	assert.ErrorIs(t, svc.CancelWorkflow(ctx, id), queuetytype.ErrInvalidState, "cancelling a cancelled workflow")

	c.compensating = true
	compensated := workflow(t, s, driver.WorkflowRunning, 0)
	require.NoError(t, svc.CancelWorkflow(ctx, compensated))
	assert.Equal(t, []string{"_on_cancel"}, c.callbacks, "the cancel callback waits for the compensations")
}

// A rewind takes the public state recorded after the step, keeps the
// runtime keys, buries the abandoned path's jobs and enqueues the next
// step.
func TestRewindRestoresStateAndBuriesAbandonedJobs(t *testing.T) {
	ctx := context.Background()
	s, svc, c := open(t)
	id := workflow(t, s, driver.WorkflowFailed, 2)
	abandoned := job(t, s, driver.JobPending, id, 2)
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		return tx.EventInsert(ctx, []*driver.WorkflowEvent{{WorkflowID: id, StepIndex: 0, Handler: "A",
			Event: driver.EventStepCompleted, StateAfter: []byte(`{"x":1}`), CreatedAt: now}})
	}))

	assert.ErrorIs(t, svc.RewindWorkflow(ctx, id, 2), queuetytype.ErrInvalidState, "rewind to the last step")
	assert.ErrorIs(t, svc.RewindWorkflow(ctx, id, 1), queuetytype.ErrNotFound, "no state recorded after step 1")
	require.NoError(t, svc.RewindWorkflow(ctx, id, 0))

	wf := getWorkflow(t, s, id)
	assert.Equal(t, driver.WorkflowRunning, wf.Status)
	assert.Equal(t, 1, wf.CurrentStep)
	state, err := workflowstate.DecodeObject("state", wf.State)
	require.NoError(t, err)
	x, _ := state.Get("x")
	assert.EqualValues(t, 1, x)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	assert.Len(t, steps, 3, "the step definitions come from the live row")
	j := getJob(t, s, abandoned)
	assert.Equal(t, driver.JobBuried, j.Status)
	assert.Equal(t, "Superseded by workflow rewind", j.ErrorMessage)
	assert.Equal(t, []int{1}, c.enqueued)
}

// A manual bury of a running workflow's step hands the workflow the
// buried step; a plain job is buried alone; a completed job is refused.
func TestBuryJobHandsRunningStepsToTheWorkflow(t *testing.T) {
	ctx := context.Background()
	s, svc, c := open(t)
	plain := job(t, s, driver.JobPending, 0, 0)
	wf := workflow(t, s, driver.WorkflowRunning, 0)
	step := job(t, s, driver.JobProcessing, wf, 0)
	done := job(t, s, driver.JobCompleted, 0, 0)

	require.NoError(t, svc.BuryJob(ctx, plain, ""))
	require.NoError(t, svc.BuryJob(ctx, step, "stuck"))
	assert.ErrorIs(t, svc.BuryJob(ctx, done, ""), queuetytype.ErrInvalidState)
	assert.Equal(t, []int64{plain, step}, c.buried)
	assert.Equal(t, []int64{step}, c.stepBuried)
	assert.Equal(t, queuetytype.ManualBuryMessage, getJob(t, s, plain).ErrorMessage)
}

// Retrying buried jobs pages through them all in batches and leaves
// workflow steps alone.
func TestRetryBuriedPagesPastWorkflowSteps(t *testing.T) {
	ctx := context.Background()
	s, svc, c := open(t)
	wf := workflow(t, s, driver.WorkflowFailed, 0)
	var want []int64
	for i := range 130 {
		if i%10 == 0 {
			job(t, s, driver.JobBuried, wf, 0)
		}
		want = append(want, job(t, s, driver.JobBuried, 0, 0))
	}
	n, err := svc.RetryBuried(ctx, queuetytype.BuriedFilter{})
	require.NoError(t, err)
	assert.EqualValues(t, len(want), n)
	assert.Equal(t, want, c.requeued)
}
