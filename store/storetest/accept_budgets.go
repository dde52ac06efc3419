package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Budgets/MaxTransitionsFromPHPRows", testMaxTransitions)
	register("Budgets/CountersKeptLikeQueuety", testBudgetCounters)
}

// testMaxTransitions: a workflow Queuety PHP dispatched with
// max_transitions(1) fails on its second transition with Queuety's
// message; its counters are in _workflow_counters.
func testMaxTransitions(t *testing.T, e *Env) {
	state := `{"_steps":[{"type":"single","name":"0","class":"a"},{"type":"single","name":"1","class":"b"}],` +
		`"_queue":"default","_priority":0,"_max_attempts":3,"_workflow_budget":{"max_transitions":1},` +
		`"_workflow_counters":{"transitions":0,"cost_units":0,"started_workflows":0}}`
	wfID, _ := e.insertWorkflow(state, "a")
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleStep("b", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"b": 1}, nil })
	e.Drain(w)
	wf := e.Workflow(wfID)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Workflow exceeded max_transitions budget of 1.", wf.ErrorMessage, "error")
	assert.Equal(t, 1, wf.CurrentStep, "failed on the second step")
	_, ok := e.State(wfID)["b"]
	assert.False(t, ok, "the breaching step's output was merged")
}

// testBudgetCounters: with a budget set, every transition and every
// finished job's cost units are counted, as Queuety counts them.
func testBudgetCounters(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "counted", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "plan"},
		{Type: queuetytype.StepForEach, ItemsKey: "items", Handler: "item"},
		{Type: queuetytype.StepSingle, Handler: "done"},
	}, MaxForEachItems: 10}, nil)
	w := e.Worker(nil)
	w.HandleStep("plan", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"items": []any{1, 2, 3}}, nil
	})
	w.HandleForEach("item", func(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil })
	w.HandleStep("done", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	v, _ := e.rawState(id).Get("_workflow_counters")
	counters, ok := v.(*phpjson.Object)
	require.True(t, ok, "_workflow_counters: %v", v)
	assert.Equal(t, `{"transitions":3,"cost_units":5,"started_workflows":0}`, string(mustMarshal(t, counters)),
		"3 transitions; cost units: plan 1 + 3 branches + done 1 (placeholders cost 0)")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := phpjson.Marshal(v)
	require.NoError(t, err)
	return b
}

func init() {
	register("Budgets/BreachesFailWithBudgetCategory", testBudgetBreaches)
	register("Budgets/InitialStateOverMaxStateBytes", testInitialStateBudget)
	register("Budgets/PruneStateAfter", testPruneStateAfter)
}

// testBudgetBreaches: each of max_transitions, max_state_bytes and
// max_cost_units, set with the builder, fails the workflow on the step
// that breaches it, with Queuety's message and a budget failure.
func testBudgetBreaches(t *testing.T, e *Env) {
	cases := []struct {
		name string
		b    *builder.Builder
		msg  string
	}{
		{"transitions", builder.Workflow("loop").Then("a").Then("b").Then("c").MaxTransitions(2),
			"Workflow exceeded max_transitions budget of 2."},
		{"state bytes", builder.Workflow("big").Then("a").Then("grow").Then("c").MaxStateBytes(64),
			"Workflow exceeded max_state_bytes budget of 64."},
		{"cost units", builder.Workflow("costly").Then("a").Then("b").Then("c").MaxCostUnits(2), // each step job costs 1
			"Workflow exceeded max_cost_units budget of 2."},
	}
	w := e.Worker(nil)
	for _, h := range []string{"a", "b", "c"} {
		w.HandleStep(h, func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{h: 1}, nil })
	}
	w.HandleStep("grow", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"blob": strings.Repeat("x", 100)}, nil
	})
	ids := make([]int64, len(cases))
	for i, c := range cases {
		ids[i] = e.startB(c.b, nil)
	}
	e.Drain(w)
	for i, c := range cases {
		wf := e.Workflow(ids[i])
		assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "%s: status", c.name)
		assert.Equal(t, c.msg, wf.ErrorMessage, "%s: error", c.name)
		fails, err := e.C.Failures(e.Ctx, ids[i], 0)
		require.NoError(t, err)
		if assert.Len(t, fails, 1, "%s: failures", c.name) {
			assert.Equal(t, driver.FailureBudget, fails[0].Category, "%s: failure category", c.name)
			assert.True(t, fails[0].NonRetryable, "%s: non-retryable", c.name)
		}
	}
}

// testInitialStateBudget: dispatch rejects an initial state over
// max_state_bytes and writes nothing.
func testInitialStateBudget(t *testing.T, e *Env) {
	_, err := builder.Workflow("big").Then("a").MaxStateBytes(10).Dispatch(e.Ctx, e.C, queuety.State{"blob": "0123456789"})
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "max_state_bytes budget of 10")
	assert.Empty(t, e.Workflows(driver.WorkflowFilter{}), "workflows written")
}

// testPruneStateAfter: with PruneStateAfter(1), a step's output keys are
// dropped once the next step has completed (Queuety's prune_state_after:
// after step n, outputs of steps <= n-1 go), and _step_outputs keeps
// Queuety's bookkeeping.
func testPruneStateAfter(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("pruned").Then("a").Then("b").Then("c").PruneStateAfter(1), queuety.State{"input": 1})
	seen := map[string]queuety.State{}
	w := e.Worker(nil, worker.Concurrency(1))
	for _, h := range []string{"a", "b", "c"} {
		w.HandleStep(h, func(_ context.Context, s queuety.State) (queuety.State, error) {
			seen[h] = s
			return queuety.State{h + "_out": true}, nil
		})
	}
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, queuety.State{"input": int64(1), "a_out": true}, seen["b"], "b sees a's output")
	assert.Equal(t, queuety.State{"input": int64(1), "b_out": true}, seen["c"], "c no longer sees a's output")
	assert.Equal(t, queuety.State{"input": int64(1), "c_out": true}, e.State(id), "final state keeps the last output")
	raw := e.rawState(id)
	v, _ := raw.Get("_step_outputs")
	assert.Equal(t, `{"2":["c_out"]}`, string(mustMarshal(t, v)), "_step_outputs")
}
