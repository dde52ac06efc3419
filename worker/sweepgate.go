package worker

// The sweep gate: the sweeps that find rows by a stored time or state
// (stale claims, activity timeouts, wait timers, stranded workflow waits,
// state-machine timers, workflow deadlines, the callbacks of batches and
// workflows another engine ended, overruns) keep their intervals, but a
// run only opens a transaction when one read, made at most once a gate
// period for all of them (one statement, no transaction), found a row of
// its kind due. An idle worker then costs the database one statement a
// gate period for them, instead of a transaction per sweep run. The
// registry's prune of gone workers reads the same gate (registry.go).

import (
	"context"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// gateKind names what a gated sweep looks for.
type gateKind int

const (
	gateStale gateKind = iota
	gateActivity
	gateWait
	gateMachine
	gateDeadline
	gateBatch
	gateEnds
	gateOverrun
	gateWorkflowWait
)

// gatePeriodMax is the longest the gate's read is used before it is read
// again.
const gatePeriodMax = 5 * time.Second

// sweepGate holds the gate's last read.
type sweepGate struct {
	mu   sync.Mutex
	read time.Time // on the worker's timer clock; zero: read again
	due  driver.MaintenanceDue
}

// gatePeriod is how long one read of the gate serves: gatePeriodMax, or
// less when the wait-timer or watchdog interval is shorter, and never more
// than the lease timeout, so that no claim made after a read can go stale
// before the next read.
func (w *Worker) gatePeriod() time.Duration {
	p := min(gatePeriodMax, w.engine.LeaseTimeout())
	for _, iv := range []time.Duration{w.cfg.intervals.WaitTimer, w.cfg.intervals.Watchdog} {
		if iv > 0 {
			p = min(p, iv)
		}
	}
	return p
}

// gated returns run behind the gate for sweeps of kind: run is called
// when the gate's read (at most a gate period old) has a row of that kind
// due, or cannot tell (a store without driver.IdleReader, a failed read);
// otherwise the run is skipped and reports no rows, to the observer too
// (as a sweep named name that changed nothing, so that a dashboard still
// sees the sweep run on an idle system; not when name is "", for a sweep
// that reports nothing itself). After a run the gate reads
// again, so a sweep with more rows than one run takes runs again. A row
// written after a read is seen by the next read: a sweep finds it within
// its interval plus a gate period of falling due.
func (w *Worker) gated(name string, kind gateKind, run func(context.Context) (int, error)) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		t0 := time.Now()
		if !w.gateDue(ctx, kind) {
			if w.obs != nil && name != "" {
				w.obs.Swept(ctx, observe.Sweep{Name: name, Duration: time.Since(t0)})
			}
			return 0, nil
		}
		n, err := run(ctx)
		w.gate.mu.Lock()
		w.gate.read = time.Time{}
		w.gate.mu.Unlock()
		return n, err
	}
}

// gateDue reports whether a sweep of kind may have rows to act on now.
func (w *Worker) gateDue(ctx context.Context, kind gateKind) bool {
	g := &w.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.read.IsZero() || w.timers.Since(g.read) >= w.gatePeriod() {
		d, known, err := w.engine.MaintenanceDue(ctx)
		if !known || err != nil {
			if err != nil && ctx.Err() == nil {
				w.log.Debug("queuety: read when the sweeps are due; sweeping", "err", err)
			}
			g.read = time.Time{}
			return true
		}
		g.due, g.read = d, w.timers.Now()
	}
	now := w.engine.Clock().Now()
	passed := func(t time.Time) bool { return !t.IsZero() && !t.After(now) }
	switch kind {
	case gateStale:
		return g.due.Unreserved || (!g.due.Reserved.IsZero() && passed(g.due.Reserved.Add(w.engine.LeaseTimeout()))) ||
			passed(g.due.HeldClaims) // a held transaction's process died (internal/engine/heldjournal.go)
	case gateActivity:
		return passed(g.due.Activity)
	case gateWait:
		return passed(g.due.Wait)
	case gateMachine:
		return passed(g.due.MachineTimer)
	case gateDeadline:
		// Past a deadline, or a workflow failed with a deadline within
		// the lookback of the deadlines another engine expired.
		return passed(g.due.Deadline) || withinLookback(g.due.FailedDeadline, now, engine.ForeignExpiryLookback)
	case gateBatch:
		return g.due.BatchOpen || withinLookback(g.due.BatchFinished, now, engine.BatchLookback)
	case gateEnds:
		return withinLookback(g.due.Failed, now, engine.ForeignEndLookback) || withinLookback(g.due.Cancelled, now, engine.ForeignEndLookback)
	case gateOverrun:
		return g.due.Running
	case gateWorkflowWait:
		return g.due.WaitingForWorkflows
	}
	return true
}

// withinLookback reports whether t is set and within the window the
// sweeps of the workflows and batches other engines ended read: not
// before now less lookback (less a second more, as the stores compare
// whole seconds).
func withinLookback(t, now time.Time, lookback time.Duration) bool {
	return !t.IsZero() && !t.Before(now.Add(-lookback-time.Second))
}

// pruneNeedless reports whether the gate's last read, made within
// registryPruneEvery, found no worker in the registry gone for longer
// than the retention at now: then the registry's prune would remove
// nothing (a row written after the read has a later heartbeat).
func (w *Worker) pruneNeedless(now time.Time, retention time.Duration) bool {
	g := &w.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.read.IsZero() || w.timers.Since(g.read) >= registryPruneEvery {
		return false
	}
	return g.due.WorkerHeartbeat.IsZero() || !g.due.WorkerHeartbeat.Before(now.Add(-retention))
}
