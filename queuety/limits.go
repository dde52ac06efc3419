package queuety

import (
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// ConcurrencyGroup puts the job in a concurrency group (the
// concurrency_group column): workers start at most the group's limit of
// its jobs at once across the fleet, the limit coming from
// ConcurrencyLimit on the job or from worker.GroupLimit. Group cost
// budgets (worker.GroupCostBudget) apply to it too. Several handlers can
// share one group, for example all calls to one provider.
func ConcurrencyGroup(name string) JobOption {
	return func(s *queuetytype.JobSpec) { s.Resources.ConcurrencyGroup = name }
}

// ConcurrencyLimit stores the limit of the job's concurrency group on the
// job (the concurrency_limit column, 1 to 65535): no worker, Go or
// Queuety PHP, starts the job while that many jobs of its group are
// processing. It needs ConcurrencyGroup. This is Queuety PHP's
// ->concurrency_group($group, $limit).
func ConcurrencyLimit(n int) JobOption {
	return func(s *queuetytype.JobSpec) { s.Resources.ConcurrencyLimit = n }
}

// CostUnits sets the job's relative cost (the cost_units column, at least
// 1; the default is 1). Cost budgets (worker.CostBudget,
// worker.GroupCostBudget, worker.QueueCostBudget) and a workflow's
// MaxCostUnits budget add it up.
func CostUnits(n int) JobOption {
	return func(s *queuetytype.JobSpec) { s.Resources.CostUnits, s.Resources.CostUnitsSet = n, true }
}

// RateLimit stores a rate limit for the job's handler in the job
// (__queuety_runtime.rate_limit, as Queuety's step definitions store
// theirs): at most max starts of the handler in any window, window being
// whole seconds (at least one). A worker that has no limit of its own for
// the handler (worker.RateLimit) adopts the first one it claims, as
// Queuety PHP workers do, so both honour it.
func RateLimit(max int, window time.Duration) JobOption {
	return func(s *queuetytype.JobSpec) { s.Resources.RateLimit = queuetytype.Rate{Max: max, Window: window} }
}
