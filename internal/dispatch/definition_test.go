package dispatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// Output of Queuety PHP 0.22.0 for
//
//	Queuety::workflow('per_item')->then('Handle')->max_for_each_items(4)
//	    ->max_started_workflows(2)->must_complete_within(60)->version('v1')
//	    ->on_deadline('Late')->on_cancel('Undo')->build_runtime_definition()
//
// and the state Workflow::materialize_defined_workflow_state() builds
// from it for a start_workflows child (started by workflow 7, step 2).
const (
	phpRuntimeDefinition = `{"name":"per_item","steps":[{"type":"single","name":"0","class":"Handle"}],"queue":"default","priority":0,"max_attempts":3,"cancel_handler":"Undo","prune_after":null,"deadline_seconds":60,"deadline_handler":"Late","definition_version":"v1","definition_hash":"6f4fb8a8a4b54652c1bb7f5606417599234d7f5619d951a040b2eb26eb61085f","workflow_budget":{"max_for_each_items":4,"max_started_workflows":2},"compensate_on_failure":false}`
	phpStartedChildState = `{"item":"a","start_item_index":0,"_steps":[{"type":"single","name":"0","class":"Handle"}],"_queue":"default","_priority":0,"_max_attempts":3,"_on_cancel":{"class":"Undo","payload":[]},"_deadline_seconds":60,"_on_deadline":{"class":"Late","payload":[]},"_definition_version":"v1","_definition_hash":"6f4fb8a8a4b54652c1bb7f5606417599234d7f5619d951a040b2eb26eb61085f","_workflow_budget":{"max_for_each_items":4,"max_started_workflows":2},"_workflow_counters":{"transitions":0,"cost_units":0,"started_workflows":0},"_started_by_workflow_id":7,"_started_by_step_index":2}`
	// dispatch_run_workflow('sub', steps, ['x' => 1], 'kids', 2, 5)
	phpRunChildState = `{"x":1,"_steps":[{"type":"single","name":"0","class":"C"}],"_queue":"kids","_priority":2,"_max_attempts":5}`
)

func singleStep(class string) []any {
	o := phpjson.NewObject()
	o.Set("type", "single")
	o.Set("name", "0")
	o.Set("class", class)
	return []any{o}
}

func TestRuntimeObjectMatchesQueuetyPHP(t *testing.T) {
	d := Definition{
		Name: "per_item", Steps: singleStep("Handle"), OnCancel: "Undo", OnDeadline: "Late", DeadlineSecs: 60,
		Version: "v1", MaxForEachItems: 4, MaxStartedWorkflows: 2,
	}
	assert.Equal(t, phpRuntimeDefinition, string(workflowstate.EncodeJSON(d.RuntimeObject())))

	plain := Definition{Name: "plain", Steps: singleStep("A")}
	assert.Contains(t, string(workflowstate.EncodeJSON(plain.RuntimeObject())), `"workflow_budget":[],"compensate_on_failure":false}`,
		"no budgets encode as PHP's empty array")
}

func TestDefinitionFromRuntime(t *testing.T) {
	o, err := phpjson.DecodeObject([]byte(phpRuntimeDefinition))
	require.NoError(t, err)
	d, err := DefinitionFromRuntime(o)
	require.NoError(t, err)
	assert.Equal(t, "per_item", d.Name)
	assert.Equal(t, "Undo", d.OnCancel)
	assert.Equal(t, "Late", d.OnDeadline)
	assert.Equal(t, int64(60), d.DeadlineSecs)
	assert.Equal(t, "v1", d.Version)
	assert.Equal(t, 3, d.MaxAttempts)
	assert.Equal(t, 4, d.MaxForEachItems)
	assert.Equal(t, 2, d.MaxStartedWorkflows)
	assert.Zero(t, d.MaxTransitions)
	assert.Equal(t, "6f4fb8a8a4b54652c1bb7f5606417599234d7f5619d951a040b2eb26eb61085f", d.Hash)
	assert.True(t, d.RuntimeOrder)
	assert.Equal(t, phpRuntimeDefinition, string(workflowstate.EncodeJSON(d.RuntimeObject())), "round trip")

	// The state of a started child, key for key.
	d.StartedByWorkflowID, d.StartedByStepIndex = 7, 2
	state := phpjson.NewObject()
	state.Set("item", "a")
	state.Set("start_item_index", int64(0))
	p, err := Prepare(d, state)
	require.NoError(t, err)
	assert.Equal(t, phpStartedChildState, string(p.stateJSON), "started child state (expected: PHP)")

	// A run_workflow child has no hash.
	run := Definition{Name: "sub", Steps: singleStep("C"), Queue: "kids", Priority: 2, MaxAttempts: 5, RuntimeOrder: true}
	state = phpjson.NewObject()
	state.Set("x", int64(1))
	p, err = Prepare(run, state)
	require.NoError(t, err)
	assert.Equal(t, phpRunChildState, string(p.stateJSON), "run-workflow child state (expected: PHP)")
}

func TestDefinitionFromRuntimeRejects(t *testing.T) {
	tests := map[string]string{
		"no steps":         `{"name":"w","steps":[]}`,
		"steps not a list": `{"name":"w","steps":{"a":1}}`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := phpjson.DecodeObject([]byte(raw))
			require.NoError(t, err)
			_, err = DefinitionFromRuntime(o)
			assert.Error(t, err)
		})
	}
	_, err := DefinitionFromRuntime(nil)
	assert.Error(t, err)
}

func TestDefinitionFromRuntimePrunes(t *testing.T) {
	o, err := phpjson.DecodeObject([]byte(`{"name":"w","steps":[{"type":"single","class":"A"}],"prune_after":2}`))
	require.NoError(t, err)
	d, err := DefinitionFromRuntime(o)
	require.NoError(t, err)
	assert.Equal(t, 2, d.PruneAfter, "prune_after")
	p, err := Prepare(d, phpjson.NewObject())
	require.NoError(t, err)
	assert.Equal(t, `{"_steps":[{"type":"single","class":"A"}],"_queue":"default","_priority":0,"_max_attempts":3,"_prune_state_after":2,"_step_outputs":[]}`,
		string(p.stateJSON), "state keys in Queuety's materialize order")
}

func TestEncodeDecodeDefinitionKeepsBudgets(t *testing.T) {
	d := Definition{
		Name: "w", Steps: singleStep("A"), Queue: "q", Priority: 1, MaxAttempts: 4, RunTimeoutSecs: 30,
		IdempotencyKey: "k", MaxForEachItems: 9, MaxStartedWorkflows: 3,
	}
	got, err := DecodeDefinition(workflowstate.EncodeJSON(d.Encode()))
	require.NoError(t, err)
	assert.Equal(t, 9, got.MaxForEachItems)
	assert.Equal(t, 3, got.MaxStartedWorkflows)
	assert.Equal(t, int64(30), got.RunTimeoutSecs)
	assert.Equal(t, "k", got.IdempotencyKey)
	assert.False(t, got.RuntimeOrder, "decoded schedules dispatch like the builder")
	assert.Empty(t, got.Hash, "the hash is recomputed")
	assert.Equal(t, string(workflowstate.EncodeJSON(d.Encode())), string(workflowstate.EncodeJSON(got.Encode())), "round trip")
}

func TestPrepareWorkflowBudgets(t *testing.T) {
	d := Definition{Name: "w", Steps: singleStep("A"), MaxStateBytes: 10}
	state := phpjson.NewObject()
	state.Set("big", "0123456789")
	_, err := Prepare(d, state)
	assert.ErrorContains(t, err, "max_state_bytes budget of 10")

	d = Definition{Name: "w", Steps: singleStep("A"), MaxForEachItems: -1}
	_, err = Prepare(d, phpjson.NewObject())
	assert.ErrorContains(t, err, "max_for_each_items must be at least 1")

	// Without budgets, no budget keys.
	p, err := Prepare(Definition{Name: "w", Steps: singleStep("A")}, phpjson.NewObject())
	require.NoError(t, err)
	_, ok := p.state.Get("_workflow_budget")
	assert.False(t, ok, "_workflow_budget without budgets")
}
