package worker

import (
	"context"
	"errors"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
)

// The worker's reports to its client's observer (see package observe).
// Each is called only when there is an observer.

// observeClaim reports a claim round trip that began at t0 and returns
// the context the claimed jobs descend from.
func (w *Worker) observeClaim(ctx context.Context, t0 time.Time, limit int, jobs []*engine.Claimed, err error) context.Context {
	c := observe.Claim{Queues: w.cfg.queues, Limit: limit, Started: t0, Duration: time.Since(t0), Err: err}
	if len(jobs) > 0 {
		c.Jobs = make([]observe.Job, len(jobs))
		for i, cj := range jobs {
			c.Jobs[i] = cj.ObservedJob()
		}
	}
	return w.obs.Claimed(ctx, c)
}

// observeHandBack ends an attempt that went back to its queue unused:
// interrupted by the shutdown (err is the handler's error) or deferred
// (err is nil).
func (w *Worker) observeHandBack(ctx context.Context, job observe.Job, err error) {
	if w.obs == nil {
		return
	}
	e := observe.Ended{Outcome: observe.OutcomeHandedBack, Err: err}
	if err != nil {
		e.Category = observe.CategoryShutdown
	}
	w.obs.JobEnd(ctx, job, e)
}

// observeEnd ends an attempt whose result was recorded (or given up on,
// err != nil).
func (w *Worker) observeEnd(r *engine.Result, err error) {
	e := observe.Ended{Outcome: r.Outcome, Err: r.Err}
	switch {
	case errors.Is(err, queuetytype.ErrStaleAttempt):
		e.Outcome = observe.OutcomeStale
	case err != nil:
		e.Outcome = observe.OutcomeUnrecorded
	case e.Outcome == "" && r.Err == nil:
		e.Outcome = observe.OutcomeCompleted
	case e.Outcome == "":
		e.Outcome = observe.OutcomeRetried
	}
	e.Category = engine.ErrorCategory(e.Err)
	if !r.Returned.IsZero() {
		e.Recorded = time.Since(r.Returned)
	}
	w.obs.JobEnd(r.Observed, r.Claimed.ObservedJob(), e)
}
