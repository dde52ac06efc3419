package builder

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// ForEach adds a step that reads the list under itemsKey from the state
// and runs handler once per item, each as its own branch job (Queuety's
// for_each()). Register handler on a worker with HandleForEach; it gets
// the state, its item and the item's index. The step settles by its mode:
// when every branch has finished (the default), at the first success
// (FirstSuccess) or once Quorum(n) branches succeeded. Its aggregate
// (queuety.ForEachResult) is stored under ResultKey, and a Reducer turns
// it into state keys.
//
// Options: Name, ResultKey, FirstSuccess, Quorum, Reducer, and the job
// options (Queue, Priority, Retry, Backoff, the activity timeouts, Job),
// which apply to every branch job. Without Name the step is named after
// its index.
func (b *Builder) ForEach(itemsKey, handler string, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepForEach, ItemsKey: itemsKey, Handler: handler}
	return b.add(step, "ForEach", handler, opts, forEachStep)
}

// Condition is what a repeat step tests: a state key's value (StateIs) or
// a registered repeat condition (ConditionNamed).
type Condition struct {
	stateKey string
	expected any
	named    string
}

// StateIs is the condition "state[key] equals expected". expected is a
// JSON value (a string, number, bool, nil, or a list or map of them); the
// two are compared as Queuety compares them, by their JSON encoding with
// object keys sorted (so 3 and 3.0 differ, and a missing key is nil).
func StateIs(key string, expected any) Condition {
	return Condition{stateKey: key, expected: expected}
}

// ConditionNamed is the condition decided by the repeat condition
// registered under name with HandleRepeatCondition.
func ConditionNamed(name string) Condition {
	// Queuety stores expected = true for condition repeats too.
	return Condition{named: name, expected: true}
}

// RepeatWhile adds a step that jumps back to the earlier step named
// target while cond holds, and otherwise continues (Queuety's
// repeat_while()). target must name a step added before this one (give it
// a Name, or use its index: "0", "1", ...).
//
// Options: Name and MaxIterations. Without Name the step is named
// "repeat_while_<index>".
func (b *Builder) RepeatWhile(target string, cond Condition, opts ...StepOption) *Builder {
	return b.repeat(queuety.RepeatWhile, "RepeatWhile", target, cond, opts)
}

// RepeatUntil adds a step that jumps back to the earlier step named
// target until cond holds, and then continues (Queuety's repeat_until()).
// See RepeatWhile for target and the options. Without Name the step is
// named "repeat_until_<index>".
func (b *Builder) RepeatUntil(target string, cond Condition, opts ...StepOption) *Builder {
	return b.repeat(queuety.RepeatUntil, "RepeatUntil", target, cond, opts)
}

func (b *Builder) repeat(mode, method, target string, cond Condition, opts []StepOption) *Builder {
	step := queuety.WorkflowStep{
		Type: queuetytype.StepRepeat, RepeatMode: mode, Target: target,
		StateKey: cond.stateKey, Expected: cond.expected, Condition: cond.named,
	}
	return b.add(step, method, target, opts, repeatStep)
}

// RunWorkflow adds a step that starts child as a child workflow called
// name and waits for it to finish (Queuety's run_workflow()). The child
// starts with the parent's public state. Only the child's steps, queue,
// priority and max attempts are carried, as in Queuety, so child must not
// set deadlines, callbacks, budgets, a version or an idempotency key. The
// builder takes a copy of child as it is now.
//
// The only option is Name; without it the step is named after its index.
// A nil or invalid child is reported by Definition and Dispatch.
func (b *Builder) RunWorkflow(name string, child *Builder, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepRunWorkflow}
	if def, ok := b.child("RunWorkflow", name, child); ok {
		def.Name = name
		step.Child = def
	}
	return b.add(step, "RunWorkflow", name, opts, runStep)
}

// StartWorkflows adds a step that starts one independent workflow from
// child per item of the list under itemsKey, and stores their ids under
// "started_workflow_ids" (Queuety's start_workflows()). An item that is an
// object is merged into its workflow's initial state; any other item is
// stored under "item". Each workflow also gets the parent's public state
// and start_item_index. The builder takes a copy of child as it is now.
//
// Options: Name, ResultKey (where the ids go), PayloadKey, InheritState
// and Group. Without Name the step is named "start_workflows_<index>".
func (b *Builder) StartWorkflows(itemsKey string, child *Builder, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepStartWorkflows, ItemsKey: itemsKey, InheritState: true}
	if def, ok := b.child("StartWorkflows", itemsKey, child); ok {
		step.Child = def
	}
	return b.add(step, "StartWorkflows", itemsKey, opts, startStep)
}

// child copies a child workflow's definition, recording a nil child or
// the child's own mistakes.
func (b *Builder) child(method, arg string, child *Builder) (*queuety.WorkflowDefinition, bool) {
	switch {
	case child == nil:
		b.fail(fmt.Errorf("%w: step %d (%s(%q)): child workflow is nil (use builder.Workflow)",
			queuetytype.ErrInvalidArgument, len(b.def.Steps), method, arg))
		return nil, false
	case child.err != nil:
		b.fail(fmt.Errorf("step %d (%s(%q)): child workflow %q: %w", len(b.def.Steps), method, arg, child.def.Name, child.err))
		return nil, false
	}
	def := cloneDefinition(child.def)
	return &def, true
}

// WaitForWorkflow adds a step that parks the workflow until the workflow
// with this id has completed, and continues with its public state merged,
// or stored under ResultKey (Queuety's wait_for_workflow()). A workflow
// that fails or is cancelled fails the wait.
//
// Options: Name and ResultKey. Without Name the step is named
// "wait_for_workflow".
func (b *Builder) WaitForWorkflow(id int64, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, Name: "wait_for_workflow", WorkflowIDs: []int64{id}}
	return b.add(step, "WaitForWorkflow", id, opts, waitWorkflowStep)
}

// WaitForWorkflowIn is WaitForWorkflow for the workflow whose id is in
// the state under stateKey when the step runs.
func (b *Builder) WaitForWorkflowIn(stateKey string, opts ...StepOption) *Builder {
	b.checkKey("WaitForWorkflowIn", "state key", stateKey)
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, Name: "wait_for_workflow", WorkflowIDKey: stateKey}
	return b.add(step, "WaitForWorkflowIn", stateKey, opts, waitWorkflowStep)
}

// WaitForWorkflows adds a step that parks the workflow until the
// workflows ids have completed: all of them (the default), any one (Any)
// or Quorum(n) of them (Queuety's wait_for_workflows()). The builder keeps
// its own copy of ids.
//
// Options: Name, ResultKey, Any and Quorum. Without Name the step is
// named "wait_for_workflows_<index>".
func (b *Builder) WaitForWorkflows(ids []int64, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowIDs: append([]int64{}, ids...)}
	return b.add(step, "WaitForWorkflows", ids, opts, waitWorkflowStep)
}

// WaitForWorkflowsIn is WaitForWorkflows for the workflow ids in the state
// under stateKey when the step runs, such as the ids a StartWorkflows step
// stored.
func (b *Builder) WaitForWorkflowsIn(stateKey string, opts ...StepOption) *Builder {
	b.checkKey("WaitForWorkflowsIn", "state key", stateKey)
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowIDKey: stateKey}
	return b.add(step, "WaitForWorkflowsIn", stateKey, opts, waitWorkflowStep)
}

// WaitForWorkflowGroup is WaitForWorkflows for the workflows a
// StartWorkflows step recorded with Group(group) (Queuety's
// wait_for_workflow_group()). Without Name the step is named
// "wait_for_workflow_group_<index>".
func (b *Builder) WaitForWorkflowGroup(group string, opts ...StepOption) *Builder {
	b.checkKey("WaitForWorkflowGroup", "group key", group)
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForWorkflows, WorkflowGroupKey: group}
	return b.add(step, "WaitForWorkflowGroup", group, opts, waitWorkflowStep)
}

// checkKey records an empty key given to method.
func (b *Builder) checkKey(method, what, key string) {
	if strings.TrimSpace(key) == "" {
		b.fail(fmt.Errorf("%w: step %d (%s): %s is empty", queuetytype.ErrInvalidArgument, len(b.def.Steps), method, what))
	}
}

// MaxForEachItems caps how many items one ForEach step may expand into
// (Queuety's max_for_each_items budget, stored in _workflow_budget); a
// longer list fails the workflow. n must be at least 1.
func (b *Builder) MaxForEachItems(n int) *Builder {
	if n < 1 {
		b.fail(fmt.Errorf("%w: max for-each items must be at least 1, got %d", queuetytype.ErrInvalidArgument, n))
	}
	b.def.MaxForEachItems = n
	return b
}

// MaxStartedWorkflows caps how many workflows the StartWorkflows steps
// may start in total (Queuety's max_started_workflows budget, stored in
// _workflow_budget); a step that would go over fails the workflow. n must
// be at least 1.
func (b *Builder) MaxStartedWorkflows(n int) *Builder {
	if n < 1 {
		b.fail(fmt.Errorf("%w: max started workflows must be at least 1, got %d", queuetytype.ErrInvalidArgument, n))
	}
	b.def.MaxStartedWorkflows = n
	return b
}

// MaxTransitions caps the step transitions of a run (Queuety's
// max_transitions budget): the transition past n fails the workflow
// instead of letting a loop spin. n must be at least 1.
func (b *Builder) MaxTransitions(n int) *Builder {
	return b.budget("max transitions", n, &b.def.MaxTransitions)
}

// MaxStateBytes caps the public state's size as JSON (Queuety's
// max_state_bytes budget): dispatch rejects a larger initial state, and a
// step whose output makes it larger fails the workflow. n must be at
// least 1.
func (b *Builder) MaxStateBytes(n int) *Builder {
	return b.budget("max state bytes", n, &b.def.MaxStateBytes)
}

// MaxCostUnits caps the cost units of the jobs the workflow runs
// (Queuety's max_cost_units budget; a step job costs 1 unless its Job
// options say otherwise). n must be at least 1.
func (b *Builder) MaxCostUnits(n int) *Builder {
	return b.budget("max cost units", n, &b.def.MaxCostUnits)
}

// PruneStateAfter drops each step's output keys from the state once n
// more steps have completed (Queuety's prune_state_after), so a long
// workflow does not carry every intermediate result. n must be at least
// 1.
func (b *Builder) PruneStateAfter(n int) *Builder {
	return b.budget("prune state after", n, &b.def.PruneStateAfter)
}

// budget sets a positive workflow setting, or records the mistake.
func (b *Builder) budget(name string, n int, field *int) *Builder {
	if n < 1 {
		b.fail(fmt.Errorf("%w: %s must be at least 1, got %d", queuetytype.ErrInvalidArgument, name, n))
	}
	*field = n
	return b
}

// cloneDefinition deep-copies a definition's steps, their handler and id
// lists and their child definitions.
func cloneDefinition(def queuety.WorkflowDefinition) queuety.WorkflowDefinition {
	def.Steps = slices.Clone(def.Steps)
	for i := range def.Steps {
		s := &def.Steps[i]
		s.Handlers = slices.Clone(s.Handlers)
		s.Signals = slices.Clone(s.Signals)
		s.MatchPayload = maps.Clone(s.MatchPayload)
		s.WorkflowIDs = slices.Clone(s.WorkflowIDs)
		if s.Child != nil {
			c := cloneDefinition(*s.Child)
			s.Child = &c
		}
	}
	return def
}
