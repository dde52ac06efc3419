package worker

import (
	"context"
	"time"
)

// Defaults of adaptive concurrency, Queuety PHP's
// QUEUETY_WORKER_POOL_SCALE_INTERVAL and QUEUETY_WORKER_POOL_IDLE_GRACE.
const (
	ScaleIntervalDefault  = 5 * time.Second
	ScaleIdleGraceDefault = 15 * time.Second
)

// scaleConfig is AdaptiveConcurrency's setting.
type scaleConfig struct {
	min, max  int // 0: fixed concurrency
	interval  time.Duration
	idleGrace time.Duration
	idleSet   bool // ScaleIdleGrace was given
}

// AdaptiveConcurrency lets the number of handlers the worker runs at once
// grow and shrink with the backlog between min and max, as Queuety PHP's
// adaptive pool (wp queuety work --min-workers --max-workers) grows and
// shrinks its worker processes. Every ScaleInterval the worker counts its
// demand: the handlers it runs plus the jobs due for it now (up to max),
// and sets its concurrency to that, within [min, max]. It grows at once;
// it shrinks while jobs are waiting, and when none is, only once none has
// waited for the idle grace, so short bursts do not make it churn
// (Queuety's WorkerPoolScalePolicy). Shrinking never stops a running
// handler: the worker claims again once fewer than the new limit run.
//
// The worker starts at min. It replaces Concurrency; BatchSize and
// MaxAbandoned default to max. Run scales; RunOnce runs at max. min < 1
// or max < min panics, since that is a programming error. The scaling
// runs on the worker's timer clock (see TimerClock).
func AdaptiveConcurrency(min, max int) Option {
	if min < 1 || max < min {
		panic("worker: AdaptiveConcurrency: want 1 <= min <= max")
	}
	return func(c *config) { c.scale.min, c.scale.max = min, max }
}

// ScaleInterval sets how often a worker with AdaptiveConcurrency resizes
// (default ScaleIntervalDefault; Queuety's
// QUEUETY_WORKER_POOL_SCALE_INTERVAL). d <= 0 takes the default.
func ScaleInterval(d time.Duration) Option { return func(c *config) { c.scale.interval = d } }

// ScaleIdleGrace sets how long no job may have waited before a worker
// with AdaptiveConcurrency shrinks (default ScaleIdleGraceDefault;
// Queuety's QUEUETY_WORKER_POOL_IDLE_GRACE). d < 0 counts as 0.
func ScaleIdleGrace(d time.Duration) Option {
	return func(c *config) { c.scale.idleGrace = max(d, 0); c.scale.idleSet = true }
}

// ScaleTarget is Queuety's WorkerPoolScalePolicy::target_worker_count:
// the concurrency for a demand of demand handlers, between min and max,
// kept at current or above when it may not shrink and at current or below
// when it may not grow.
func ScaleTarget(demand, current, min, max int, canGrow, canShrink bool) int {
	target := clamp(demand, min, max)
	if !canGrow && target > clamp(current, min, current) {
		target = clamp(current, min, current)
	}
	if !canShrink && target < current {
		target = current
	}
	return target
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, max(v, lo))) }

// Concurrency returns how many handlers the worker runs at once now: the
// Concurrency option, or with AdaptiveConcurrency its current size.
func (w *Worker) Concurrency() int {
	if n := w.limit.Load(); n > 0 {
		return int(n)
	}
	return w.cfg.concurrency
}

// scaler resizes the worker every scale interval until ctx is done.
func (w *Worker) scaler(ctx context.Context) {
	sc := w.cfg.scale
	var lastDemand time.Time // when jobs were last seen waiting
	for {
		t := w.timers.NewTimer(sc.interval)
		if h := w.cfg.test.scaleArmed; h != nil {
			h()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
		backlog, err := w.engine.Backlog(ctx, w.cfg.queues, w.handlers(), sc.max)
		if err != nil {
			w.log.Warn("queuety: count due jobs to scale; keeping the concurrency", "err", err)
			continue
		}
		now := w.timers.Now()
		canShrink := true
		if backlog > 0 {
			lastDemand = now
		} else if !lastDemand.IsZero() && now.Sub(lastDemand) < sc.idleGrace {
			canShrink = false
		}
		from := w.Concurrency()
		to := ScaleTarget(w.busyCount()+backlog, from, sc.min, sc.max, true, canShrink)
		if to != from {
			w.limit.Store(int64(to))
			w.log.Info("queuety: worker concurrency scaled", "from", from, "to", to, "backlog", backlog)
			if to > from {
				select { // free slots: claim now
				case w.freed <- struct{}{}:
				default:
				}
			}
		}
		if h := w.cfg.test.scaled; h != nil {
			h(from, to)
		}
	}
}
