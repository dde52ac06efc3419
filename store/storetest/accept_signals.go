package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Signals/WaitForSignalsAllAndAny", testWaitForSignals)
	register("Signals/ApprovalDecisionInput", testHumanWaits)
	register("Signals/ApprovalTimeoutRaceHasOneOutcome", testApprovalRace)
}

// recordState is a step that records the state it got, by workflow.
func recordState(got *sync.Map) queuety.StepFunc {
	return func(ctx context.Context, s queuety.State) (queuety.State, error) {
		info, _ := queuety.JobInfoFrom(ctx)
		got.Store(info.WorkflowID, s)
		return nil, nil
	}
}

func testWaitForSignals(t *testing.T, e *Env) {
	all := e.startB(builder.Workflow("both").WaitForSignals([]string{"legal", "finance"}).Then("next"), nil)
	anyID := e.startB(builder.Workflow("either").WaitForSignals([]string{"legal", "finance"}, builder.Any(), builder.ResultKey("first")).Then("next"), nil)
	var got sync.Map
	w := e.Worker(nil)
	w.HandleStep("next", recordState(&got))
	e.Drain(w)
	for _, id := range []int64{all, anyID} {
		require.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "workflow %d waits", id)
		require.NoError(t, e.C.Signal(e.Ctx, id, "finance", queuety.State{"budget": 10}))
	}
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(all).Status, "all: one of two signals is not enough")
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(anyID).Status, "any: the first signal settles it")
	require.NoError(t, e.C.Signal(e.Ctx, all, "legal", queuety.State{"ok": true}))
	e.Drain(w)
	st, _ := got.Load(all)
	assert.Equal(t, queuety.State{"budget": int64(10), "ok": true}, st, "all: both payloads merged")
	st, _ = got.Load(anyID)
	assert.Equal(t, queuety.State{"first": map[string]any{"finance": map[string]any{"budget": int64(10)}}}, st, "any: the winner under the result key")
	wf := e.Workflow(all)
	raw := e.rawState(all)
	v, _ := raw.Get("_steps")
	assert.Contains(t, string(mustMarshal(t, v)), `"name":"wait_for_signals_0","signal_name":"legal","signal_names":["legal","finance"],"wait_mode":"all"`,
		"encoded as Queuety's wait_for_signals()")
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status")
}

func testHumanWaits(t *testing.T, e *Env) {
	approval := e.startB(builder.Workflow("a").WaitForApproval().Then("next"), nil)
	decision := e.startB(builder.Workflow("d").WaitForDecision().Then("next"), nil)
	input := e.startB(builder.Workflow("i").WaitForInput().Then("next"), nil)
	var got sync.Map
	w := e.Worker(nil)
	w.HandleStep("next", recordState(&got))
	e.Drain(w)
	name, err := e.C.Approve(e.Ctx, approval, queuety.State{"by": "ada"})
	require.NoError(t, err)
	assert.Equal(t, "approval", name, "approval signal")
	name, err = e.C.Reject(e.Ctx, decision, queuety.State{"reason": "too costly"})
	require.NoError(t, err)
	assert.Equal(t, "rejected", name, "reject signal of a decision")
	name, err = e.C.SubmitInput(e.Ctx, input, queuety.State{"title": "Q3"})
	require.NoError(t, err)
	assert.Equal(t, "input", name, "input signal")
	e.Drain(w)
	st, _ := got.Load(approval)
	assert.Equal(t, queuety.State{"approval": map[string]any{"by": "ada"}}, st, "approval")
	st, _ = got.Load(decision)
	assert.Equal(t, queuety.State{"decision": map[string]any{"outcome": "rejected", "signal": "rejected",
		"data": map[string]any{"reason": "too costly"}}}, st, "decision")
	st, _ = got.Load(input)
	assert.Equal(t, queuety.State{"input": map[string]any{"title": "Q3"}}, st, "input")
	v, _ := e.rawState(decision).Get("_steps")
	assert.Contains(t, string(mustMarshal(t, v)), `{"type":"wait_for_signal","name":"wait_for_decision","signal_name":"approved","signal_names":["approved","rejected"],"wait_mode":"any","result_key":"decision","match_payload":[],"correlation_key":null,"human_wait":"decision","decision_map":{"approved":"approved","rejected":"rejected"},"compensation":null}`,
		"encoded as Queuety's wait_for_decision()")
	// A decision approved through Approve uses the decision's approve signal.
	d2 := e.startB(builder.Workflow("d2").WaitForDecision(builder.SignalNames("yes", "no")).Then("next"), nil)
	e.Drain(w)
	name, err = e.C.Approve(e.Ctx, d2, nil)
	require.NoError(t, err)
	assert.Equal(t, "yes", name, "approve signal of a decision with its own names")
	e.Drain(w)
	st, _ = got.Load(d2)
	assert.Equal(t, "approved", st.(queuety.State)["decision"].(map[string]any)["outcome"], "outcome")
}

// testApprovalRace: an approval wait with a timeout, approved just as the
// timer fires, in 12 workflows at once: each gets exactly one outcome.
func testApprovalRace(t *testing.T, e *Env) {
	const rounds = 12
	ids := make([]int64, rounds)
	for i := range ids {
		ids[i] = e.startB(builder.Workflow("race").WaitForApproval(builder.Timeout(time.Minute)).Then("next"), nil)
	}
	var got sync.Map
	w := e.Worker(nil)
	w.HandleStep("next", recordState(&got))
	e.Drain(w)
	e.Clock.Advance(time.Minute + time.Second)
	approver, timer := e.Client(), e.Client()
	var wg sync.WaitGroup
	var answered sync.Map // workflow id -> whether Approve succeeded
	for _, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// An approval that comes after the timer won finds no wait
			// and is refused.
			_, err := approver.Approve(context.Background(), id, queuety.State{"by": "ops"})
			if err != nil {
				assert.ErrorIs(t, err, queuetytype.ErrInvalidState, "approve")
			}
			answered.Store(id, err == nil)
		}()
		go func() {
			defer wg.Done()
			_, _, err := sweep.FireWaitTimeouts(context.Background(), clientseam.Engine(timer), 5)
			assert.NoError(t, err, "timer")
		}()
	}
	wg.Wait()
	e.Drain(w)
	for _, id := range ids {
		assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "workflow %d", id)
		st := e.State(id)
		timedOut, ok := st[queuety.TimedOutKey("approval")].(bool)
		require.Truef(t, ok, "workflow %d: no timed-out marker in %v", id, st)
		_, approved := st["approval"]
		assert.NotEqualf(t, timedOut, approved, "workflow %d: approved exactly when the timer lost (timed_out=%v)", id, timedOut)
		succeeded, _ := answered.Load(id)
		assert.Equalf(t, approved, succeeded, "workflow %d: Approve succeeded exactly when it settled the wait", id)
		resumed := 0
		for _, ev := range e.events(id) {
			if ev.Event == driver.EventWorkflowResumed {
				resumed++
			}
		}
		assert.Equal(t, 1, resumed, "workflow %d: workflow_resumed events", id)
		assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "next"}), 1, "next step enqueued once")
	}
}
