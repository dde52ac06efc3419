package builder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// stepGoldens pair a Go builder with the _steps[1] entry Queuety PHP's
// WorkflowBuilder::build_steps() (0.22.0) wrote for the same calls, shown
// in each case's comment. Every workflow starts with a plain step, so the
// first job dispatched is an ordinary one.
var stepGoldens = []struct {
	name  string
	build func() *builder.Builder
	php   string
}{
	{
		// ->for_each('items', 'ProcessItem')
		"for_each default",
		func() *builder.Builder { return golden().ForEach("items", "ProcessItem") },
		`{"type":"for_each","name":"1","items_key":"items","class":"ProcessItem","result_key":null,"mode":"all","quorum":null,"reducer_class":null,"compensation":null}`,
	},
	{
		// ->for_each('tasks', 'ProcessTask', 'task_results', ForEachMode::Quorum, 2, 'ReduceTasks', 'fan')
		"for_each quorum with reducer",
		func() *builder.Builder {
			return golden().ForEach("tasks", "ProcessTask", builder.ResultKey("task_results"), builder.Quorum(2),
				builder.Reducer("ReduceTasks"), builder.Name("fan"))
		},
		`{"type":"for_each","name":"fan","items_key":"tasks","class":"ProcessTask","result_key":"task_results","mode":"quorum","quorum":2,"reducer_class":"ReduceTasks","compensation":null}`,
	},
	{
		// ->for_each('items', 'ProcessItem', null, ForEachMode::FirstSuccess)
		"for_each first success",
		func() *builder.Builder { return golden().ForEach("items", "ProcessItem", builder.FirstSuccess()) },
		`{"type":"for_each","name":"1","items_key":"items","class":"ProcessItem","result_key":null,"mode":"first_success","quorum":null,"reducer_class":null,"compensation":null}`,
	},
	{
		// ->then('First', 'draft')->repeat_until('draft', 'approved', 'yes')
		"repeat until state",
		func() *builder.Builder {
			return builder.Workflow("golden").Then("First", builder.Name("draft")).
				RepeatUntil("draft", builder.StateIs("approved", "yes"))
		},
		`{"type":"repeat","name":"repeat_until_1","repeat_mode":"until","target_step":"draft","state_key":"approved","expected":"yes","condition_class":null,"max_iterations":null,"compensation":null}`,
	},
	{
		// ->repeat_while('0', null, true, null, 'KeepPolling', 5)
		"repeat while condition",
		func() *builder.Builder {
			return golden().RepeatWhile("0", builder.ConditionNamed("KeepPolling"), builder.MaxIterations(5))
		},
		`{"type":"repeat","name":"repeat_while_1","repeat_mode":"while","target_step":"0","state_key":null,"expected":true,"condition_class":"KeepPolling","max_iterations":5,"compensation":null}`,
	},
	{
		// ->run_workflow('sub', <child>->then('ChildStep')->on_queue('kids')->with_priority(Priority::High)->max_attempts(5))
		"run workflow",
		func() *builder.Builder {
			child := builder.Workflow("child").Then("ChildStep").OnQueue("kids").WithPriority(queuetytype.PriorityHigh).MaxAttempts(5)
			return golden().RunWorkflow("sub", child)
		},
		`{"type":"run_workflow","name":"1","workflow_name":"sub","workflow_steps":[{"type":"single","name":"0","class":"ChildStep"}],"workflow_queue":"kids","workflow_priority":2,"workflow_max_attempts":5,"compensation":null}`,
	},
	{
		// ->start_workflows('users', <per_item>->then('Handle')->max_for_each_items(4)->max_started_workflows(2)
		//     ->must_complete_within(60)->version('v1')->on_deadline('Late'), group_key: 'g')
		"start workflows budgeted child",
		func() *builder.Builder {
			child := builder.Workflow("per_item").Then("Handle").MaxForEachItems(4).MaxStartedWorkflows(2).
				ExecutionTimeout(time.Minute).Version("v1").OnDeadline("Late")
			return golden().StartWorkflows("users", child, builder.Group("g"))
		},
		`{"type":"start_workflows","name":"start_workflows_1","items_key":"users","result_key":"started_workflow_ids","payload_key":"item","inherit_state":true,"group_key":"g","workflow_definition":{"name":"per_item","steps":[{"type":"single","name":"0","class":"Handle"}],"queue":"default","priority":0,"max_attempts":3,"cancel_handler":null,"prune_after":null,"deadline_seconds":60,"deadline_handler":"Late","definition_version":"v1","definition_hash":"f52a71b6a1a853e83adc9d404a2e561d43c1d92221bbba2fb9f742e5ab0a75ad","workflow_budget":{"max_for_each_items":4,"max_started_workflows":2},"compensate_on_failure":false},"compensation":null}`,
	},
	{
		// ->start_workflows('users', <c>->then('H'), 'ids', 'user', false, 'go')
		"start workflows options",
		func() *builder.Builder {
			return golden().StartWorkflows("users", builder.Workflow("c").Then("H"), builder.ResultKey("ids"),
				builder.PayloadKey("user"), builder.InheritState(false), builder.Name("go"))
		},
		`{"type":"start_workflows","name":"go","items_key":"users","result_key":"ids","payload_key":"user","inherit_state":false,"group_key":null,"workflow_definition":{"name":"c","steps":[{"type":"single","name":"0","class":"H"}],"queue":"default","priority":0,"max_attempts":3,"cancel_handler":null,"prune_after":null,"deadline_seconds":null,"deadline_handler":null,"definition_version":null,"definition_hash":"39201c40cfc738d20081b401b3a31d1824685006ff5486296741560946062a50","workflow_budget":[],"compensate_on_failure":false},"compensation":null}`,
	},
	{
		// ->wait_for_workflow(42)
		"wait for workflow",
		func() *builder.Builder { return golden().WaitForWorkflow(42) },
		`{"type":"wait_for_workflows","name":"wait_for_workflow","workflow_ids":[42],"workflow_id_key":null,"workflow_group_key":null,"wait_mode":"all","quorum":null,"result_key":null,"compensation":null}`,
	},
	{
		// ->wait_for_workflow('child_id', 'child')
		"wait for workflow in state",
		func() *builder.Builder { return golden().WaitForWorkflowIn("child_id", builder.ResultKey("child")) },
		`{"type":"wait_for_workflows","name":"wait_for_workflow","workflow_ids":null,"workflow_id_key":"child_id","workflow_group_key":null,"wait_mode":"all","quorum":null,"result_key":"child","compensation":null}`,
	},
	{
		// ->wait_for_workflows([3, 4, 5], WaitMode::Quorum, 'res', null, 2)
		"wait for workflows quorum",
		func() *builder.Builder {
			return golden().WaitForWorkflows([]int64{3, 4, 5}, builder.Quorum(2), builder.ResultKey("res"))
		},
		`{"type":"wait_for_workflows","name":"wait_for_workflows_1","workflow_ids":[3,4,5],"workflow_id_key":null,"workflow_group_key":null,"wait_mode":"quorum","quorum":2,"result_key":"res","compensation":null}`,
	},
	{
		// ->wait_for_workflows('ids', WaitMode::Any)
		"wait for workflows in state any",
		func() *builder.Builder { return golden().WaitForWorkflowsIn("ids", builder.Any()) },
		`{"type":"wait_for_workflows","name":"wait_for_workflows_1","workflow_ids":null,"workflow_id_key":"ids","workflow_group_key":null,"wait_mode":"any","quorum":null,"result_key":null,"compensation":null}`,
	},
	{
		// ->wait_for_workflow_group('g')
		"wait for workflow group",
		func() *builder.Builder { return golden().WaitForWorkflowGroup("g") },
		`{"type":"wait_for_workflows","name":"wait_for_workflow_group_1","workflow_ids":null,"workflow_id_key":null,"workflow_group_key":"g","wait_mode":"all","quorum":null,"result_key":null,"compensation":null}`,
	},
}

// golden starts a workflow the way the PHP goldens do: ->then('First').
func golden() *builder.Builder { return builder.Workflow("golden").Then("First") }

func TestStepEncodingMatchesQueuetyPHP(t *testing.T) {
	for _, tc := range stepGoldens {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t)
			ctx := context.Background()
			id, err := tc.build().Dispatch(ctx, c, nil)
			require.NoError(t, err, "Dispatch")
			steps, ok := storedState(t, c, id).Get("_steps")
			require.True(t, ok, "state has no _steps")
			list, ok := steps.([]any)
			require.True(t, ok, "_steps is %T", steps)
			require.Len(t, list, 2, "steps")
			assert.Equal(t, tc.php, mustMarshal(t, list[1]), "_steps[1] (expected: PHP, actual: Go)")
		})
	}
}

// TestBudgetStateMatchesQueuetyPHP compares the whole stored state of a
// workflow with budgets with what WorkflowBuilder::dispatch() writes for
//
//	Queuety::workflow('budgeted')->then('A')->for_each('items', 'B')
//	    ->max_for_each_items(16)->max_started_workflows(12)
//	    ->idempotency_key('k1')->dispatch(['x' => 1])
func TestBudgetStateMatchesQueuetyPHP(t *testing.T) {
	const php = `{"x":1,"_steps":[{"type":"single","name":"0","class":"A"},{"type":"for_each","name":"1","items_key":"items","class":"B","result_key":null,"mode":"all","quorum":null,"reducer_class":null,"compensation":null}],"_queue":"default","_priority":0,"_max_attempts":3,"_definition_hash":"aa3b3c36260b7d1fccaab2da7617bb3765ede74e2913617b67e80036ed6f8431","_idempotency_key":"k1","_workflow_budget":{"max_for_each_items":16,"max_started_workflows":12},"_workflow_counters":{"transitions":0,"cost_units":0,"started_workflows":0}}`
	c := openClient(t)
	ctx := context.Background()
	id, err := builder.Workflow("budgeted").Then("A").ForEach("items", "B").
		MaxForEachItems(16).MaxStartedWorkflows(12).IdempotencyKey("k1").
		Dispatch(ctx, c, queuety.State{"x": 1})
	require.NoError(t, err, "Dispatch")
	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, php, string(wf.State), "state (expected: PHP, actual: Go)")
}

// TestChildDefinitionIsACopy checks that changing a child builder after
// handing it over changes nothing.
func TestChildDefinitionIsACopy(t *testing.T) {
	child := builder.Workflow("child").Then("a")
	b := golden().RunWorkflow("sub", child)
	child.Then("b")
	def, err := b.Definition()
	require.NoError(t, err)
	require.NotNil(t, def.Steps[1].Child)
	assert.Len(t, def.Steps[1].Child.Steps, 1, "child steps")

	def.Steps[1].Child.Steps[0].Handler = "changed"
	again, err := b.Definition()
	require.NoError(t, err)
	assert.Equal(t, "a", again.Steps[1].Child.Steps[0].Handler, "Definition returns a deep copy")
}
