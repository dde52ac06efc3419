package worker

import (
	"time"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/engine"
)

// limitsConfig collects the admission options.
type limitsConfig struct {
	set bool // l has its maps
	l   admission.Limits
	adm *admission.Admission // built by New
}

func (c *config) limitsFor() *admission.Limits {
	if !c.limits.set {
		c.limits = limitsConfig{set: true, l: admission.Limits{Rates: map[string]engine.Rate{}, Groups: map[string]int{},
			GroupCost: map[string]int{}, QueueCost: map[string]int{}}}
	}
	return &c.limits.l
}

// RateLimit limits handler to at most max starts in any window (a sliding
// window: no interval of that length sees more), counted across every
// worker and process on the database. Claims record each start under the
// handler's lock row, so two workers never both take the last slot, and
// the starts of Queuety PHP workers (their 'started' log rows) count too.
// When the window is full the worker skips the handler until the oldest
// start leaves it, and wakes then. Jobs over the limit stay pending; they
// are never claimed early, failed or buried. max must be at least 1 and
// window positive; workers sharing a handler should declare the same
// limit.
func RateLimit(handler string, max int, window time.Duration) Option {
	return func(c *config) {
		if max >= 1 && window > 0 {
			c.limitsFor().Rates[handler] = engine.Rate{Max: max, Window: window}
		}
	}
}

// GroupLimit allows at most n processing jobs of concurrency group across
// the fleet (jobs put in it with queuety.ConcurrencyGroup). A job's own
// concurrency_limit (queuety.ConcurrencyLimit, or Queuety PHP's
// ->concurrency_group($group, $limit)) applies as well, and the smaller
// wins. Go workers count every processing job of the group, Queuety PHP's
// included, under the group's lock row, so they never start more than n
// between them.
func GroupLimit(group string, n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.limitsFor().Groups[group] = n
		}
	}
}

// GroupCostBudget caps the cost units of a concurrency group's processing
// jobs, fleet-wide (Queuety's QUEUETY_RESOURCE_GROUP_COST_BUDGETS): a job
// with cost units starts only while the running cost of its group plus its
// own stays within units.
func GroupCostBudget(group string, units int) Option {
	return func(c *config) {
		if units >= 1 {
			c.limitsFor().GroupCost[group] = units
		}
	}
}

// QueueCostBudget caps the cost units of a queue's processing jobs,
// fleet-wide (Queuety's QUEUETY_RESOURCE_QUEUE_COST_BUDGETS).
func QueueCostBudget(queue string, units int) Option {
	return func(c *config) {
		if units >= 1 {
			c.limitsFor().QueueCost[queue] = units
		}
	}
}

// CostBudget caps the cost units of the jobs this worker runs at once
// (queuety.CostUnits; a job costs 1 by default, so with unit costs it
// acts as a second concurrency limit). A job costing more than the whole
// budget is never claimed by this worker.
func CostBudget(units int) Option {
	return func(c *config) {
		if units >= 1 {
			c.limitsFor().WorkerCost = units
		}
	}
}

// withAdmission gives the worker its admission. Every worker has one, so
// that the limits jobs carry (a row's concurrency_limit, a rate_limit in
// __queuety_runtime) hold without configuration, as in Queuety PHP; a
// claim of jobs that carry none costs nothing extra.
func (w *Worker) withAdmission() *Worker {
	w.cfg.limits.adm = engine.NewAdmission(w.cfg.limits.l, w.runningCost)
	return w
}

// runningCost sums the cost units of the jobs whose handlers run.
func (w *Worker) runningCost() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.inflight {
		n += a.cj.Job.CostUnits
	}
	return n
}

// idleWait is how long an idle worker waits before claiming again: the
// poll interval, or less when a rate-limited handler gets a free slot
// sooner.
func (w *Worker) idleWait(d time.Duration) time.Duration {
	now := w.engine.Clock().Now()
	if next := w.cfg.limits.adm.NextFree(now); !next.IsZero() && next.Sub(now) < d {
		return max(next.Sub(now), time.Millisecond)
	}
	return d
}
