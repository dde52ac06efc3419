package workflowstate

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// BudgetKeys are Queuety's workflow budget keys, in the order
// workflow_budget lists them.
var BudgetKeys = []string{"max_transitions", "max_for_each_items", "max_state_bytes", "max_cost_units", "max_started_workflows"}

// This file keeps Queuety's workflow budgets: the limits in
// _workflow_budget and the counters in _workflow_counters (transitions,
// cost_units, started_workflows). The counters only move when the workflow
// has at least one budget, as in Queuety; a breach fails the workflow with
// a non-retryable error (the engine wraps a Breach so).

// BudgetLimit returns one budget of the workflow, or 0 when it has none.
func BudgetLimit(state *phpjson.Object, key string) int64 {
	v, _ := state.Get("_workflow_budget")
	o, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := o.Get(key)
	return max(ToInt(n), 0)
}

// HasBudget reports whether the workflow has any budget. Without one (the
// common case) it costs one lookup.
func HasBudget(state *phpjson.Object) bool {
	v, _ := state.Get("_workflow_budget")
	o, ok := v.(*phpjson.Object)
	if !ok {
		return false
	}
	for _, k := range BudgetKeys {
		if n, _ := o.Get(k); ToInt(n) > 0 {
			return true
		}
	}
	return false
}

// BumpCounter adds n to one of _workflow_counters.
func BumpCounter(state *phpjson.Object, key string, n int64) {
	if n < 1 || !HasBudget(state) {
		return
	}
	v, _ := state.Get("_workflow_counters")
	c, ok := v.(*phpjson.Object)
	if ok {
		c = c.Clone()
	} else {
		c = phpjson.NewObject()
	}
	cur, _ := c.Get(key)
	c.Set(key, ToInt(cur)+n)
	state.Set("_workflow_counters", c)
}

// Counter returns one of _workflow_counters, or 0.
func Counter(state *phpjson.Object, key string) int64 {
	v, _ := state.Get("_workflow_counters")
	c, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := c.Get(key)
	return ToInt(n)
}

// AddCostUnits counts a finished job's cost units.
func AddCostUnits(state *phpjson.Object, units int) { BumpCounter(state, "cost_units", int64(units)) }

// ConstraintError is a workflow guardrail breach (a budget, a repeat's
// max_iterations): Queuety's WorkflowConstraintViolationException. It
// fails the workflow without retries.
type ConstraintError struct{ Message string }

// Error returns the breach's message.
func (e *ConstraintError) Error() string { return e.Message }

// ErrorClass is the class Queuety records for this failure.
func (e *ConstraintError) ErrorClass() string {
	return `Queuety\Exceptions\WorkflowConstraintViolationException`
}

// Constraint is a budget or guardrail breach with a formatted message.
func Constraint(format string, args ...any) *ConstraintError {
	return &ConstraintError{Message: fmt.Sprintf(format, args...)}
}

// Breach returns the first budget the state breaches (Queuety's
// assert_workflow_budget), or nil.
func Breach(state *phpjson.Object) *ConstraintError {
	if !HasBudget(state) {
		return nil
	}
	if l := BudgetLimit(state, "max_transitions"); l > 0 && Counter(state, "transitions") > l {
		return Constraint("Workflow exceeded max_transitions budget of %d.", l)
	}
	if l := BudgetLimit(state, "max_state_bytes"); l > 0 && int64(len(EncodePublicJSON(state))) > l {
		return Constraint("Workflow exceeded max_state_bytes budget of %d.", l)
	}
	if l := BudgetLimit(state, "max_cost_units"); l > 0 && Counter(state, "cost_units") > l {
		return Constraint("Workflow exceeded max_cost_units budget of %d.", l)
	}
	if l := BudgetLimit(state, "max_started_workflows"); l > 0 && Counter(state, "started_workflows") > l {
		return Constraint("Workflow exceeded max_started_workflows budget of %d.", l)
	}
	return nil
}
