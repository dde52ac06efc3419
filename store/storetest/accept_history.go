package storetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("History/StateAtFromEvents", testStateAt)
	register("History/RewindRunsAgainToCompletion", testRewind)
	register("History/RewindFailedWorkflow", testRewindFailed)
	register("History/ForkRunsToCompletion", testFork)
	register("History/ForkOfACompletedWorkflowIsRefused", testForkCompleted)
}

// countingWorker runs steps a, b and c, each adding its key and counting
// its calls; c fails while *failC is true.
func (e *Env) countingWorker(calls map[string]*atomic.Int64, failC *atomic.Bool) *worker.Worker {
	w := e.Worker(nil, worker.Concurrency(1))
	for _, h := range []string{"a", "b", "c"} {
		calls[h] = &atomic.Int64{}
		w.HandleStep(h, func(_ context.Context, s queuety.State) (queuety.State, error) {
			calls[h].Add(1)
			if h == "c" && failC != nil && failC.Load() {
				return nil, queuety.NonRetryable(errors.New("c broke"))
			}
			n, _ := s.Int("n")
			return queuety.State{h: n + 1, "n": n + 1}, nil
		})
	}
	return w
}

func testStateAt(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("abc").Then("a").Then("b").Then("c"), queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	e.Drain(e.countingWorker(calls, nil))
	st, err := e.C.StateAt(e.Ctx, id, 1)
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"n": int64(2), "a": int64(1), "b": int64(2)}, st, "state after step 1")
	_, err = e.C.StateAt(e.Ctx, id, 7)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "a step with no events")
}

func testRewind(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("abc").Then("a").Then("b").Then("c"), queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	w := e.countingWorker(calls, nil)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	require.NoError(t, e.C.RewindWorkflow(e.Ctx, id, 0))
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status after rewind")
	assert.Equal(t, 1, wf.CurrentStep, "current step after rewind")
	assert.Equal(t, queuety.State{"n": int64(1), "a": int64(1)}, e.State(id), "state after step 0 came back")
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "completed again")
	assert.Equal(t, []int64{1, 2, 2}, []int64{calls["a"].Load(), calls["b"].Load(), calls["c"].Load()}, "calls: a once, b and c again")
	assert.Equal(t, queuety.State{"n": int64(3), "a": int64(1), "b": int64(2), "c": int64(3)}, e.State(id), "final state")
	var rewound []string
	for _, l := range e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowRewound}) {
		rewound = append(rewound, string(l.Context))
	}
	assert.Equal(t, []string{`{"rewound_to_step":0}`}, rewound, "workflow_rewound log")
	assert.ErrorIs(t, e.C.RewindWorkflow(e.Ctx, id, 2), queuetytype.ErrInvalidState, "rewind to the last step")
	assert.ErrorIs(t, e.C.RewindWorkflow(e.Ctx, id, 5), queuetytype.ErrInvalidState, "rewind past the end")
}

func testRewindFailed(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("abc").Then("a").Then("b").Then("c"), queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	var failC atomic.Bool
	failC.Store(true)
	w := e.countingWorker(calls, &failC)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
	failC.Store(false)
	require.NoError(t, e.C.RewindWorkflow(e.Ctx, id, 0))
	wf := e.Workflow(id)
	assert.Empty(t, wf.ErrorMessage, "error cleared")
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "completed after the rewind")
	assert.Equal(t, int64(2), calls["b"].Load(), "b ran again")
}

func testFork(t *testing.T, e *Env) {
	b := builder.Workflow("approvals").Then("a").WaitForSignal("go").Then("c")
	id := e.startB(b, queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	w := e.countingWorker(calls, nil)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "original waits")
	fork, err := e.C.ForkWorkflow(e.Ctx, id)
	require.NoError(t, err)
	fwf := e.Workflow(fork)
	assert.True(t, strings.HasPrefix(fwf.Name, "approvals_fork_"), "fork name %q", fwf.Name)
	assert.Equal(t, 1, fwf.CurrentStep, "fork's position")
	assert.Equal(t, e.State(id), e.State(fork), "fork's state")
	e.Drain(w) // the fork re-runs its current step: it waits for its own signal
	require.NoError(t, e.C.Signal(e.Ctx, fork, "go", nil))
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(fork).Status, "fork completed")
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "the original is untouched")
	var ctxs []string
	for _, wid := range []int64{id, fork} {
		for _, l := range e.Logs(driver.LogFilter{WorkflowID: wid, Event: driver.LogWorkflowForked}) {
			ctxs = append(ctxs, string(l.Context))
		}
	}
	assert.Len(t, ctxs, 2, "workflow_forked logs: %v", ctxs)
}

// testForkCompleted: a completed workflow has no step left to run, so a
// fork of it is refused and creates nothing (a copy would stay running,
// with no job, forever); a failed workflow still forks at its failed step.
func testForkCompleted(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("abc").Then("a").Then("b").Then("c"), queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	var failC atomic.Bool
	w := e.countingWorker(calls, &failC)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	_, err := e.C.ForkWorkflow(e.Ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrInvalidState, "fork of a completed workflow")
	assert.Contains(t, err.Error(), "no step left to run", "the error says why")
	assert.Len(t, e.Workflows(driver.WorkflowFilter{}), 1, "no fork was created")
	assert.Empty(t, e.Logs(driver.LogFilter{Event: driver.LogWorkflowForked}), "no workflow_forked log")

	failC.Store(true)
	failed := e.startB(builder.Workflow("abc").Then("a").Then("b").Then("c"), queuety.State{"n": 0})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(failed).Status, "status")
	failC.Store(false)
	fork, err := e.C.ForkWorkflow(e.Ctx, failed)
	require.NoError(t, err, "fork of a failed workflow")
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(fork).Status, "the fork ran its failed step again and completed")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(failed).Status, "the original is untouched")
}

func init() {
	register("History/ExportReplayRoundTrip", testExportReplay)
}

// testExportReplay: an export replays into a new workflow with the same
// state, position and events (plus workflow_replayed), which runs on.
func testExportReplay(t *testing.T, e *Env) {
	b := builder.Workflow("trip").Then("a").WaitForSignal("go").Then("c")
	id := e.startB(b, queuety.State{"n": 0})
	calls := map[string]*atomic.Int64{}
	w := e.countingWorker(calls, nil)
	e.Drain(w)
	doc, err := e.C.ExportWorkflow(e.Ctx, id)
	require.NoError(t, err)
	replay, err := e.C.ReplayWorkflow(e.Ctx, doc)
	require.NoError(t, err)
	src, dst := e.Workflow(id), e.Workflow(replay)
	assert.Equal(t, src.Status, dst.Status, "status")
	assert.Equal(t, src.CurrentStep, dst.CurrentStep, "position")
	assert.Equal(t, string(src.State), string(dst.State), "state")
	srcEvents, dstEvents := e.events(id), e.events(replay)
	require.Len(t, dstEvents, len(srcEvents)+1, "events: the source's and workflow_replayed")
	for i, ev := range srcEvents {
		assert.Equal(t, ev.Event, dstEvents[i].Event, "event %d", i)
		assert.Equal(t, string(ev.StateAfter), string(dstEvents[i].StateAfter), "event %d state_after", i)
	}
	assert.Equal(t, driver.EventWorkflowReplayed, dstEvents[len(dstEvents)-1].Event, "last event")
	require.NoError(t, e.C.Signal(e.Ctx, replay, "go", nil))
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(replay).Status, "the replay ran on")
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "the source is untouched")
	_, err = e.C.ReplayWorkflow(e.Ctx, []byte(`{"workflow": 1}`))
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "an export without a workflow object")
}
