package advance

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// Workflow budgets (their limits and counters in the state) are kept by
// package workflowstate; a breach fails the workflow without retries.

// constraintf is a budget or guardrail breach: it fails the workflow
// without retries.
func (s *Service) constraintf(format string, args ...any) error {
	return s.final(workflowstate.Constraint(format, args...))
}

// checkBudget returns the first budget the state breaches (Queuety's
// assert_workflow_budget), or nil.
func (s *Service) checkBudget(state *phpjson.Object) error {
	if b := workflowstate.Breach(state); b != nil {
		return s.final(b)
	}
	return nil
}

// countTransition counts a completed transition and checks the budgets.
func (s *Service) countTransition(state *phpjson.Object) error {
	workflowstate.BumpCounter(state, "transitions", 1)
	return s.checkBudget(state)
}
