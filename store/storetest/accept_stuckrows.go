package storetest

// This file holds the cases of rows that nothing would ever move on: they
// are recovered, or failed with an error a person can act on.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Jobs/StaleRecoveryOfRowWithoutReservedAt", testStaleWithoutReservedAt)
	register("Workflows/PastLastStepIsFailed", testOverrunFailed)
	register("Workflows/MalformedStateIsDescribed", testMalformedStateDescribed)
}

// testStaleWithoutReservedAt: a processing row with no reserved_at (no
// claim time, so nothing renews it and no timeout counts from it) is
// recovered by the stale sweep at once: retried while attempts remain,
// buried with an error that says what was wrong otherwise. A processing
// row claimed just now is left alone.
func testStaleWithoutReservedAt(t *testing.T, e *Env) {
	unreserved := func(attempts int) *driver.Job {
		j := newJob("default", "h")
		j.Status, j.Attempts = driver.JobProcessing, attempts
		return j
	}
	fresh := unreserved(1)
	fresh.ReservedAt = e.Clock.Now()
	jobs := []*driver.Job{unreserved(1), unreserved(3), fresh}
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error { return tx.JobInsert(e.Ctx, jobs) }))
	retried, buried, running := jobs[0].ID, jobs[1].ID, jobs[2].ID

	assert.Equal(t, 2, e.recoverStale(), "recovered")
	j := e.Job(retried)
	assert.Equal(t, queuetytype.JobPending, j.Status, "the row with attempts left: status")
	assert.Equal(t, 1, j.Attempts, "the row with attempts left: attempts")
	assert.Equal(t, "retried", strings.Join(e.Events(driver.LogFilter{JobID: retried}), ","), "the row with attempts left: logs")
	j = e.Job(buried)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "the row without attempts left: status")
	assert.Equal(t, "Stale: the job was processing with no reserved_at (no claim time), so no worker held it.", j.ErrorMessage, "error")
	assert.Equal(t, "buried", strings.Join(e.Events(driver.LogFilter{JobID: buried}), ","), "the row without attempts left: logs")
	assert.Equal(t, queuetytype.JobProcessing, e.Job(running).Status, "the row claimed just now")
	assert.Equal(t, 0, e.recoverStale(), "recovered by a second sweep")
}

// testOverrunFailed: a running workflow whose row says it is past its last
// step (current_step 5 of 2) has no step to run and would stay running
// forever. The overrun sweep fails it, with a message that names where
// the row stands, a workflow_failed log row and an internal failure; its
// open job is buried. Running workflows within their steps are left
// alone, and a second sweep finds nothing.
func testOverrunFailed(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "two", Steps: steps("a", "b")}
	stuck, fine := e.Start(def, nil), e.Start(def, nil)
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(e.Ctx, stuck, driver.LockUpdate)
		if err != nil {
			return err
		}
		wf.CurrentStep = 5
		return tx.WorkflowUpdate(e.Ctx, wf)
	}))
	// RunAll is what a worker run once (work --once) sweeps.
	sweeper := deadline.New(e.C)
	report, err := sweeper.RunAll(e.Ctx)
	require.NoError(t, err, "sweeps")
	assert.Equal(t, 1, report.Total(), "rows the sweeps changed")

	wf := e.Workflow(stuck)
	want := fmt.Sprintf("Workflow %d is at step 5 of 2: its current step is past its last step, so no step can run. "+
		"It was failed by the engine's sweep; its state is kept.", stuck)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, want, wf.ErrorMessage, "error")
	failed := e.Logs(driver.LogFilter{WorkflowID: stuck, Event: driver.LogWorkflowFailed})
	if assert.Len(t, failed, 1, "workflow_failed log rows") {
		assert.Equal(t, want, failed[0].ErrorMessage, "the log row's error")
	}
	failures, err := e.C.Failures(e.Ctx, stuck, 0)
	require.NoError(t, err)
	if assert.Len(t, failures, 1, "failure rows") {
		assert.Equal(t, driver.FailureInternal, failures[0].Category, "category")
	}
	for _, j := range e.Jobs(driver.JobFilter{WorkflowID: stuck}) {
		assert.Equal(t, queuetytype.JobBuried, j.Status, "job %d of the failed workflow", j.ID)
	}
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(fine).Status, "the workflow within its steps")
	n, err := sweeper.Overruns(e.Ctx)
	require.NoError(t, err, "second overrun sweep")
	assert.Equal(t, 0, n, "workflows failed by a second sweep")
}

// testMalformedStateDescribed: a workflow whose stored state, or its step
// list, cannot be read is still described (what its row, jobs and logs
// say), with the reason in StateError, so the page that shows it works;
// the export and the trace, which need the state, refuse with
// ErrInvalidState and the reason instead of an internal error.
func testMalformedStateDescribed(t *testing.T, e *Env) {
	for _, c := range []struct{ state, want string }{
		{`{"broken": `, "malformed workflow state JSON"},
		{`"text"`, "malformed workflow state JSON"},
		{`{"_steps": "not a list"}`, "malformed workflow steps in the state: _steps is string, not a list"},
	} {
		id := e.Start(queuety.WorkflowDefinition{Name: "two", Steps: steps("a", "b")}, nil)
		require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
			wf, err := tx.WorkflowGet(e.Ctx, id, driver.LockUpdate)
			if err != nil {
				return err
			}
			wf.State = []byte(c.state)
			return tx.WorkflowUpdate(e.Ctx, wf)
		}))
		d, err := e.C.DescribeWorkflow(e.Ctx, id)
		if !assert.NoError(t, err, "describe the workflow with state %s", c.state) {
			continue
		}
		assert.Contains(t, d.StateError, c.want, "state %s: the reason", c.state)
		assert.Equal(t, queuetytype.WorkflowRunning, d.Status, "state %s: status", c.state)
		assert.Equal(t, 2, d.TotalSteps, "state %s: total steps", c.state)
		assert.NotEmpty(t, d.Timeline, "state %s: timeline", c.state)
		if c.want == "malformed workflow state JSON" {
			_, err = e.C.TraceWorkflow(e.Ctx, id)
			assert.True(t, errors.Is(err, queuetytype.ErrInvalidState), "state %s: trace error %v, want ErrInvalidState", c.state, err)
			assert.ErrorContains(t, err, c.want, "state %s: trace error", c.state)
		}
	}
	d, err := e.C.DescribeWorkflow(e.Ctx, e.Start(queuety.WorkflowDefinition{Name: "fine", Steps: steps("a")}, nil))
	require.NoError(t, err)
	assert.Empty(t, d.StateError, "a readable state's StateError")
}
