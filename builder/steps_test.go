package builder_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func TestInvalidCompositeSteps(t *testing.T) {
	child := builder.Workflow("child").Then("c")
	tests := []struct {
		name string
		b    *builder.Builder
		msg  string // a substring of the error
	}{
		// for_each
		{"for-each without items key", golden().ForEach(" ", "P"), "for-each steps require a non-empty items key"},
		{"for-each without handler", golden().ForEach("items", ""), "for-each handler: queuety: invalid argument: handler name is empty"},
		{"for-each reserved handler", golden().ForEach("items", "__queuety_x"), "reserved"},
		{"for-each quorum zero", golden().ForEach("items", "P", builder.Quorum(0)), "for-each quorum must be at least 1, got 0"},
		{"for-each blank reducer name", golden().ForEach("items", "P", builder.Reducer(" ")), "reducer: handler name is blank"},
		{"for-each any", golden().ForEach("items", "P", builder.Any()), "Any applies only to WaitForSignals and WaitForWorkflow(s) steps"},
		{"for-each timeout", golden().ForEach("items", "P", builder.Timeout(1)), "Timeout applies only to WaitForSignal"},
		{"for-each max iterations", golden().ForEach("items", "P", builder.MaxIterations(2)), "MaxIterations applies only to RepeatWhile"},
		{"for-each unique", golden().ForEach("items", "P", builder.Job(queuety.Unique())), "Unique"},

		// repeat
		{"repeat without target", golden().RepeatWhile(" ", builder.StateIs("k", true)), "repeat steps require a non-empty target step name"},
		{"repeat unknown target", golden().RepeatWhile("nope", builder.StateIs("k", true)), `repeat target "nope" must reference an earlier named step`},
		{"repeat later target", builder.Workflow("w").RepeatUntil("1", builder.StateIs("k", true)).Then("a"), "must reference an earlier named step"},
		{"repeat itself", golden().RepeatUntil("repeat_until_1", builder.StateIs("k", true)), "must reference an earlier named step"},
		{"repeat without condition", golden().RepeatWhile("0", builder.Condition{}), "repeat steps require either a state key or a condition"},
		{"repeat blank state key", golden().RepeatWhile("0", builder.StateIs(" ", true)), "repeat steps require a non-empty state key"},
		{"repeat blank condition", golden().RepeatWhile("0", builder.ConditionNamed(" ")), "repeat steps require a non-empty condition"},
		{"repeat max iterations zero", golden().RepeatWhile("0", builder.StateIs("k", true), builder.MaxIterations(0)), "max iterations to be at least 1"},
		{"repeat max iterations negative", golden().RepeatWhile("0", builder.StateIs("k", true), builder.MaxIterations(-2)), "max iterations to be at least 1"},
		{"repeat expected not JSON", golden().RepeatWhile("0", builder.StateIs("k", func() {})), "expected value does not encode as JSON"},
		{"repeat retry", golden().RepeatWhile("0", builder.StateIs("k", true), builder.Retry(2)), "Job options"},
		{"repeat result key", golden().RepeatWhile("0", builder.StateIs("k", true), builder.ResultKey("r")), "ResultKey applies only to"},

		// run_workflow
		{"run nil child", golden().RunWorkflow("sub", nil), "child workflow is nil"},
		{"run child with a mistake", golden().RunWorkflow("sub", builder.Workflow("c").Sleep(-1)), `child workflow "c"`},
		{"run child without steps", golden().RunWorkflow("sub", builder.Workflow("c")), `workflow "sub" has no steps`},
		{"run child without name", golden().RunWorkflow("", child), "workflow name is empty"},
		{"run child with a deadline", golden().RunWorkflow("sub", builder.Workflow("c").Then("a").MustCompleteWithin(0, 1, 0, 0)), "deadlines are not carried"},
		{"run child with a budget", golden().RunWorkflow("sub", builder.Workflow("c").Then("a").MaxForEachItems(3)), "budgets are not carried"},
		{"run child with a callback", golden().RunWorkflow("sub", builder.Workflow("c").Then("a").OnCancel("x")), "callbacks are not carried"},
		{"run child with an invalid step", golden().RunWorkflow("sub", builder.Workflow("c").ForEach("", "h")), "non-empty items key"},
		{"run with queue", golden().RunWorkflow("sub", child, builder.Queue("q")), "Job options"},

		// start_workflows
		{"start without items key", golden().StartWorkflows("", child), "workflow start steps require a non-empty items key"},
		{"start blank result key", golden().StartWorkflows("items", child, builder.ResultKey(" ")), "non-empty result key"},
		{"start blank payload key", golden().StartWorkflows("items", child, builder.PayloadKey(" ")), "non-empty payload key"},
		{"start nil child", golden().StartWorkflows("items", nil), "child workflow is nil"},
		{"start invalid child", golden().StartWorkflows("items", builder.Workflow("c").Then("")), "handler name is empty"},
		{"start child with idempotency key", golden().StartWorkflows("items", builder.Workflow("c").Then("a").IdempotencyKey("k")), "idempotency keys are not carried"},
		{"start quorum", golden().StartWorkflows("items", child, builder.Quorum(2)), "Quorum applies only to"},
		{"start priority", golden().StartWorkflows("items", child, builder.Priority(1)), "Job options"},

		// wait_for_workflows
		{"wait zero id", golden().WaitForWorkflow(0), "workflow ids must be positive, got 0"},
		{"wait negative id", golden().WaitForWorkflows([]int64{1, -2}), "got -2"},
		{"wait no ids", golden().WaitForWorkflows(nil), "at least one workflow id"},
		{"wait empty state key", golden().WaitForWorkflowsIn(" "), "WaitForWorkflowsIn): state key is empty"},
		{"wait single empty state key", golden().WaitForWorkflowIn(""), "state key is empty"},
		{"wait empty group", golden().WaitForWorkflowGroup(""), "group key is empty"},
		{"wait quorum zero", golden().WaitForWorkflows([]int64{1}, builder.Quorum(0)), "workflow wait quorum must be at least 1"},
		{"wait first success", golden().WaitForWorkflows([]int64{1}, builder.FirstSuccess()), "FirstSuccess applies only to ForEach"},
		{"wait group option", golden().WaitForWorkflowGroup("g", builder.Group("h")), "Group applies only to StartWorkflows"},
		{"wait retry", golden().WaitForWorkflow(1, builder.Retry(3)), "Job options"},

		// workflow level
		{"max for-each items zero", golden().MaxForEachItems(0), "max for-each items must be at least 1, got 0"},
		{"max started workflows negative", golden().MaxStartedWorkflows(-1), "max started workflows must be at least 1"},
		{"then with any", golden().Then("b", builder.Any()), "Any applies only to"},
		{"then with group", golden().Then("b", builder.Group("g")), "Group applies only to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b.Definition()
			require.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
			if tt.msg != "" {
				assert.ErrorContains(t, err, tt.msg)
			}
		})
	}
}

func TestWorkflowStepValidation(t *testing.T) {
	child := &queuety.WorkflowDefinition{Name: "c", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "h"}}}
	first := queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: "a"}
	tests := []struct {
		name string
		step queuety.WorkflowStep
		msg  string
	}{
		{"for-each bad mode", queuety.WorkflowStep{Type: queuetytype.StepForEach, ItemsKey: "i", Handler: "h", Mode: "any"}, `for-each mode "any"`},
		{"for-each quorum without quorum mode", queuety.WorkflowStep{Type: queuetytype.StepForEach, ItemsKey: "i", Handler: "h", Quorum: 2}, "quorum applies only to the quorum mode"},
		{"repeat bad mode", queuety.WorkflowStep{Type: queuetytype.StepRepeat, RepeatMode: "sometimes", Target: "0", StateKey: "k"}, `repeat mode "sometimes"`},
		{"repeat both forms", queuety.WorkflowStep{Type: queuetytype.StepRepeat, RepeatMode: queuety.RepeatWhile, Target: "0", StateKey: "k", Condition: "C"}, "cannot define both a state key and a condition"},
		{"run without child", queuety.WorkflowStep{Type: queuetytype.StepRunWorkflow}, "run_workflow steps require a child workflow definition"},
		{"wait two sources", queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowIDs: []int64{1}, WorkflowIDKey: "k"}, "exactly one of workflow ids, a state key or a group key, got 2"},
		{"wait no source", queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows}, "got 0"},
		{"wait bad mode", queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowGroupKey: "g", Mode: "first_success"}, `workflow wait mode "first_success"`},
		{"wait quorum outside quorum mode", queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowGroupKey: "g", Mode: queuetytype.WaitAny, Quorum: 1}, "quorum applies only to the quorum mode"},
		{"start options", queuety.WorkflowStep{Type: queuetytype.StepStartWorkflows, ItemsKey: "i", Child: child, Options: queuetytype.JobSpec{Queue: "q"}}, "job options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := queuety.WorkflowDefinition{Name: "w", Steps: []queuety.WorkflowStep{first, tt.step}}
			err := def.Validate()
			require.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
			assert.ErrorContains(t, err, tt.msg)
		})
	}

	// Nesting is bounded, even when a definition contains itself.
	loop := &queuety.WorkflowDefinition{Name: "loop"}
	loop.Steps = []queuety.WorkflowStep{{Type: queuetytype.StepRunWorkflow, Child: loop}}
	assert.ErrorContains(t, loop.Validate(), "nest more than")
}

func TestStartWorkflowsInheritsStateByDefault(t *testing.T) {
	def, err := golden().StartWorkflows("users", builder.Workflow("c").Then("h")).Definition()
	require.NoError(t, err)
	assert.True(t, def.Steps[1].InheritState, "InheritState")
}
