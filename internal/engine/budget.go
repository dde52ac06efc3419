package engine

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// Workflow budgets (their limits and counters in the state) are kept by
// package workflowstate; a breach fails the workflow without retries.

// ConstraintError is a workflow guardrail breach (see
// workflowstate.ConstraintError).
type ConstraintError = workflowstate.ConstraintError

// constraintf is a budget or guardrail breach: it fails the workflow
// without retries.
func constraintf(format string, args ...any) error {
	return NonRetryable(workflowstate.Constraint(format, args...))
}

// checkBudget returns the first budget the state breaches (Queuety's
// assert_workflow_budget), or nil.
func checkBudget(state *phpjson.Object) error {
	if b := workflowstate.Breach(state); b != nil {
		return NonRetryable(b)
	}
	return nil
}

// countTransition counts a completed transition and checks the budgets.
func countTransition(state *phpjson.Object) error {
	workflowstate.BumpCounter(state, "transitions", 1)
	return checkBudget(state)
}

// countTransition is countTransition on the step's state.
func (sc *stepCtx) countTransition() error { return countTransition(sc.state) }
