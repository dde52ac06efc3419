package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
)

// Abandoning handlers that ignore their cancelled context (see
// AbandonGrace). A goroutine cannot be stopped from outside, so a handler
// that never looks at its context would hold its slot, and its job's
// claim, for as long as it runs. Once its context has been cancelled for
// the abandon grace, the worker settles the attempt without it: it
// records the context's cause as the attempt's error, stops renewing the
// claim, and frees the slot. The handler's goroutine runs on; its result,
// when it comes, is handed to the engine, which refuses it because the
// attempt no longer owns its job.
//
// An attempt is settled once, by whichever comes first: the handler's
// return or the abandonment (attempt.state). The abandonment takes over
// the attempt's slot, which it frees at once, and its count in wg, which
// it gives up once the outcome is recorded; the late return then only
// leaves the abandoned set.

// ErrUnhealthy is wrapped by the error Run and RunOnce return when they
// stopped because the worker became unhealthy (see StopWhenUnhealthy).
var ErrUnhealthy = errors.New("worker: unhealthy")

// Health is a worker's health: how many of its handlers it has abandoned
// that still run, against how many it tolerates.
type Health struct {
	// Abandoned is the number of abandoned handlers still running (see
	// AbandonGrace).
	Abandoned int
	// MaxAbandoned is how many abandoned handlers may run without holding
	// a slot (see MaxAbandoned).
	MaxAbandoned int
	// AbandonedJobs are the ids of the abandoned handlers' jobs, sorted.
	AbandonedJobs []int64
}

// Healthy reports whether the abandoned handlers are within MaxAbandoned.
// An unhealthy worker claims less work than its concurrency allows, or
// none, until its abandoned handlers return; only ending the process ends
// them, so a supervisor should restart it.
func (h Health) Healthy() bool { return h.Abandoned <= h.MaxAbandoned }

// Health reports the worker's health. It is safe to call at any time, from
// any goroutine, for example from a health check endpoint.
func (w *Worker) Health() Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthLocked()
}

func (w *Worker) healthLocked() Health {
	h := Health{Abandoned: len(w.abandoned), MaxAbandoned: w.cfg.maxAbandoned}
	for a := range w.abandoned {
		h.AbandonedJobs = append(h.AbandonedJobs, a.cj.Job.ID)
	}
	slices.Sort(h.AbandonedJobs)
	return h
}

// unhealthyError is the cause Run and RunOnce stop with when the worker
// became unhealthy.
func unhealthyError(h Health) error {
	return fmt.Errorf("%w: %d abandoned handlers still running (jobs %v), more than the %d tolerated",
		ErrUnhealthy, h.Abandoned, h.AbandonedJobs, h.MaxAbandoned)
}

// unhealthyCause returns the cause ctx was cancelled with when the worker
// became unhealthy, or nil.
func unhealthyCause(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrUnhealthy) {
		return err
	}
	return nil
}

// setStopRun installs (or, with nil, removes) the function that stops the
// Run or RunOnce under way; with StopWhenUnhealthy on, a worker that is
// already unhealthy stops at once.
func (w *Worker) setStopRun(stop context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopRun = stop
	if stop != nil && w.cfg.stopUnhealthy {
		if h := w.healthLocked(); !h.Healthy() {
			stop(unhealthyError(h))
		}
	}
}

// watch makes a's handler, about to run under hctx, one the abandoner
// watches (ctx is the attempt's context, job the observed job, startedAt
// and t0 when the handler starts on the engine clock and the wall
// clock). The handler's return settles the attempt unless the abandoner
// did first (attempt.state).
func (w *Worker) watch(a *attempt, ctx, hctx context.Context, job observe.Job, startedAt, t0 time.Time) {
	a.hctx, a.ctx, a.job, a.startedAt, a.t0 = hctx, ctx, job, startedAt, t0
	a.watched.Store(true)
}

// abandonTick is how often the abandoner looks for handlers to abandon: a
// quarter of the abandon grace, within 10 ms and 1 s. A handler is
// abandoned between the grace and the grace plus a tick after its context
// was cancelled.
func (w *Worker) abandonTick() time.Duration {
	return min(max(w.cfg.abandonGrace/4, 10*time.Millisecond), time.Second)
}

// abandoner abandons, until ctx is done, the running handlers whose
// context has been done for the abandon grace, except those cancelled by
// the worker's shutdown (the hard-stop timeout bounds those). It checks
// on a ticker rather than arming a timer per attempt, so that running a
// job costs nothing for it.
func (w *Worker) abandoner(ctx context.Context) {
	t := time.NewTicker(w.abandonTick())
	defer t.Stop()
	var due []*attempt
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		due = due[:0]
		w.mu.Lock()
		for _, a := range w.inflight {
			if w.overdue(a, now) {
				due = append(due, a)
			}
		}
		for a := range w.replaced {
			if w.overdue(a, now) {
				due = append(due, a)
			}
		}
		w.mu.Unlock()
		for _, a := range due {
			a.recording.Add(1) // before the state changes: a late return that finds it changed waits for the recording
			if !a.state.CompareAndSwap(attemptRunning, attemptAbandoned) {
				a.recording.Done() // the handler returned first
				continue
			}
			w.abandon(a)
		}
	}
}

// overdue reports whether a's handler, running, has had its context done
// for the abandon grace at now. Called by the abandoner with w.mu held.
func (w *Worker) overdue(a *attempt, now time.Time) bool {
	if !a.watched.Load() || a.state.Load() != attemptRunning || a.hctx.Err() == nil {
		return false
	}
	if errors.Is(context.Cause(a.hctx), queuetytype.ErrWorkerShutdown) {
		return false
	}
	if a.doneSeen.IsZero() {
		a.doneSeen = now
	}
	return now.Sub(a.doneSeen) >= w.cfg.abandonGrace
}

// forgetLocked removes a from inflight, or from replaced when a later
// attempt of its job took its entry; the lease keeper then renews its
// claim no more. Called with w.mu held.
func (w *Worker) forgetLocked(a *attempt) {
	if w.inflight[a.cj.Job.ID] == a {
		delete(w.inflight, a.cj.Job.ID)
	} else {
		delete(w.replaced, a)
	}
}

// abandon settles a's attempt, which the abandoner has just taken from
// its handler (attempt.state), without the handler: it frees the slot,
// stops the claim's renewals, logs and reports the abandonment, and
// records the attempt with its context's cause, as if the handler had
// returned it. The logging and the recording go on in a goroutine of
// their own, so that a slow recording holds up no other abandonment.
func (w *Worker) abandon(a *attempt) {
	cause := context.Cause(a.hctx)
	ran := time.Since(a.t0)
	a.cancel(cause) // the attempt's own context too, if only the handler's deadline passed

	w.mu.Lock()
	w.busy--
	w.forgetLocked(a)
	w.abandoned[a] = struct{}{}
	if w.busy == 0 {
		w.serial.allFinished()
	}
	h := w.healthLocked()
	became := !h.Healthy() && h.Abandoned-1 <= h.MaxAbandoned
	stopRun := w.stopRun
	taken := w.takenLocked()
	w.mu.Unlock()
	w.stats.abandoned.Add(1)
	w.slotFreed(taken)
	go w.recordAbandoned(a, cause, ran, h, became, stopRun)
}

// recordAbandoned logs and reports the abandonment of a (h is the health
// it left, became whether it made the worker unhealthy), records the
// attempt, and then gives up the slot's count in wg.
func (w *Worker) recordAbandoned(a *attempt, cause error, ran time.Duration, h Health, became bool, stopRun context.CancelCauseFunc) {
	cj := a.cj
	w.log.Warn("queuety: handler ignored its cancelled context; abandoned it: its slot is free and its attempt is recorded as failed",
		"handler", cj.Job.Handler, "job_id", cj.Job.ID, "attempt", cj.Job.Attempts, "ran", ran.Round(time.Millisecond),
		"grace", w.cfg.abandonGrace, "cause", cause, "abandoned", h.Abandoned, "max_abandoned", h.MaxAbandoned)
	if became {
		w.log.Error("queuety: worker unhealthy: more abandoned handlers still running than it tolerates; "+
			"each further one holds its slot, and only restarting the process ends them",
			"abandoned", h.Abandoned, "max_abandoned", h.MaxAbandoned, "job_ids", h.AbandonedJobs)
		if w.cfg.stopUnhealthy && stopRun != nil {
			stopRun(unhealthyError(h))
		}
	}

	err := fmt.Errorf("%w (the handler ignored its cancelled context for %s and was abandoned)", cause, w.cfg.abandonGrace)
	if w.obs != nil {
		w.obs.HandlerEnd(a.hctx, a.job, observe.Handled{Duration: ran, Err: err})
		w.observeAbandon(a.ctx, a.job, false, ran, cause, h)
	}
	r := &engine.Result{Claimed: cj, Err: err, StartedAt: a.startedAt, Duration: ran, Funcs: w.funcs}
	if w.obs != nil {
		r.Observed, r.Returned = a.ctx, time.Now()
	}
	w.finish(r)
	a.recording.Done()
	w.wg.Done() // the slot's count, taken over from the handler's runner
}

// lateResult hands the result of an abandoned handler to the engine once
// the abandonment's recording is done. The engine refuses it (counted in
// Stats.Stale), because the attempt no longer owns its job, unless that
// recording failed and the attempt still does.
func (w *Worker) lateResult(a *attempt, r *engine.Result) {
	a.recording.Wait()
	w.finish(r)
}

// abandonedReturned notes that the handler of a, abandoned earlier, has
// returned.
func (w *Worker) abandonedReturned(a *attempt) {
	a.recording.Wait()
	w.mu.Lock()
	delete(w.abandoned, a)
	h := w.healthLocked()
	held := h.Abandoned+1 > h.MaxAbandoned // it held a slot, now free
	taken := w.takenLocked()
	w.mu.Unlock()
	ran := time.Since(a.t0)
	w.log.Info("queuety: abandoned handler returned", "handler", a.cj.Job.Handler, "job_id", a.cj.Job.ID,
		"attempt", a.cj.Job.Attempts, "ran", ran.Round(time.Millisecond), "abandoned", h.Abandoned)
	if held && h.Healthy() {
		w.log.Info("queuety: worker healthy again", "abandoned", h.Abandoned, "max_abandoned", h.MaxAbandoned)
	}
	if w.obs != nil {
		w.observeAbandon(a.ctx, a.job, true, ran, context.Cause(a.hctx), h)
	}
	if held {
		w.slotFreed(taken)
	}
}

// observeAbandon reports an abandonment, or an abandoned handler's
// return, to an observer that hears them.
func (w *Worker) observeAbandon(ctx context.Context, job observe.Job, returned bool, ran time.Duration, cause error, h Health) {
	ao, ok := w.obs.(observe.AbandonObserver)
	if !ok {
		return
	}
	ao.HandlerAbandoned(ctx, job, observe.Abandon{Returned: returned, Running: ran, Cause: cause,
		Abandoned: h.Abandoned, MaxAbandoned: h.MaxAbandoned})
}

// logAbandonedAtStop notes, when Run or RunOnce returns, the abandoned
// handlers still running: their attempts are recorded, so the worker does
// not wait for them.
func (w *Worker) logAbandonedAtStop() {
	if h := w.Health(); h.Abandoned > 0 {
		w.log.Warn("queuety: stopping with abandoned handlers still running; their attempts were recorded",
			"abandoned", h.Abandoned, "job_ids", h.AbandonedJobs)
	}
}
