package engine

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// This file keeps Queuety's workflow budgets: the limits in
// _workflow_budget and the counters in _workflow_counters (transitions,
// cost_units, started_workflows). The counters only move when the workflow
// has at least one budget, as in Queuety; a breach fails the workflow with
// a non-retryable error.

// budgetLimit returns one budget of the workflow, or 0 when it has none.
func budgetLimit(state *phpjson.Object, key string) int64 {
	v, _ := state.Get("_workflow_budget")
	o, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := o.Get(key)
	return max(toInt(n), 0)
}

// hasBudget reports whether the workflow has any budget. Without one (the
// common case) it costs one lookup.
func hasBudget(state *phpjson.Object) bool {
	v, _ := state.Get("_workflow_budget")
	o, ok := v.(*phpjson.Object)
	if !ok {
		return false
	}
	for _, k := range budgetKeys {
		if n, _ := o.Get(k); toInt(n) > 0 {
			return true
		}
	}
	return false
}

// bumpCounter adds n to one of _workflow_counters.
func bumpCounter(state *phpjson.Object, key string, n int64) {
	if n < 1 || !hasBudget(state) {
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
	c.Set(key, toInt(cur)+n)
	state.Set("_workflow_counters", c)
}

func counter(state *phpjson.Object, key string) int64 {
	v, _ := state.Get("_workflow_counters")
	c, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := c.Get(key)
	return toInt(n)
}

// addCostUnits counts a finished job's cost units.
func addCostUnits(state *phpjson.Object, units int) { bumpCounter(state, "cost_units", int64(units)) }

// constraintf is a budget or guardrail breach: it fails the workflow
// without retries.
func constraintf(format string, args ...any) error {
	return NonRetryable(&ConstraintError{Message: fmt.Sprintf(format, args...)})
}

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

// checkBudget returns the first budget the state breaches (Queuety's
// assert_workflow_budget), or nil.
func checkBudget(state *phpjson.Object) error {
	if !hasBudget(state) {
		return nil
	}
	if l := budgetLimit(state, "max_transitions"); l > 0 && counter(state, "transitions") > l {
		return constraintf("Workflow exceeded max_transitions budget of %d.", l)
	}
	if l := budgetLimit(state, "max_state_bytes"); l > 0 && int64(len(EncodeJSON(PublicState(state)))) > l {
		return constraintf("Workflow exceeded max_state_bytes budget of %d.", l)
	}
	if l := budgetLimit(state, "max_cost_units"); l > 0 && counter(state, "cost_units") > l {
		return constraintf("Workflow exceeded max_cost_units budget of %d.", l)
	}
	if l := budgetLimit(state, "max_started_workflows"); l > 0 && counter(state, "started_workflows") > l {
		return constraintf("Workflow exceeded max_started_workflows budget of %d.", l)
	}
	return nil
}

// countTransition counts a completed transition and checks the budgets.
func countTransition(state *phpjson.Object) error {
	bumpCounter(state, "transitions", 1)
	return checkBudget(state)
}

// countTransition is countTransition on the step's state.
func (sc *stepCtx) countTransition() error { return countTransition(sc.state) }
