package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
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
	assert.Equal(t, queuety.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Workflow exceeded max_transitions budget of 1.", wf.ErrorMessage, "error")
	assert.Equal(t, 1, wf.CurrentStep, "failed on the second step")
	_, ok := e.State(wfID)["b"]
	assert.False(t, ok, "the breaching step's output was merged")
}

// testBudgetCounters: with a budget set, every transition and every
// finished job's cost units are counted, as Queuety counts them.
func testBudgetCounters(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "counted", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "plan"},
		{Type: queuety.StepForEach, ItemsKey: "items", Handler: "item"},
		{Type: queuety.StepSingle, Handler: "done"},
	}, MaxForEachItems: 10}, nil)
	w := e.Worker(nil)
	w.HandleStep("plan", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"items": []any{1, 2, 3}}, nil
	})
	w.HandleForEach("item", func(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil })
	w.HandleStep("done", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	require.Equal(t, queuety.WorkflowCompleted, e.Workflow(id).Status, "status")
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
