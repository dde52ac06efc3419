package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
)

// MaxExecutionTime fails every attempt whose handler runs longer than d,
// Queuety PHP's QUEUETY_MAX_EXECUTION_TIME (300 s in PHP; off by default
// here): the handler's ctx expires after d with a
// *middleware.TimeoutError as its cause, and when the handler returns the
// attempt fails with it ("Job exceeded maximum execution time of N
// seconds.", class Queuety\Exceptions\TimeoutException) and is retried
// while attempts remain, as PHP retries a TimeoutException. It wraps the
// handler outside all middleware; a Timeout middleware or the job's
// start-to-close timeout may end the attempt earlier. Go cannot interrupt
// a handler that ignores its ctx: see AbandonGrace for what happens then.
// d <= 0 turns it off.
func MaxExecutionTime(d time.Duration) Option { return func(c *config) { c.maxExecution = max(d, 0) } }

// timed wraps h in the worker's MaxExecutionTime, if any.
func (w *Worker) timed(h queuety.Handler) queuety.Handler {
	if w.cfg.maxExecution <= 0 {
		return h
	}
	return middleware.Timeout(w.cfg.maxExecution)(h)
}

// buried calls the OnBuried hook of r's handler when recording r buried
// its job. The hook runs here, after the bury committed, once; a panic in
// it is logged and goes no further.
func (w *Worker) buried(r *engine.Result) {
	if r.Err == nil || r.Outcome != observe.OutcomeBuried {
		return
	}
	fn, ok := w.reg.BuriedHook(r.Claimed.Job.Handler)
	if !ok {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("queuety: OnBuried hook panicked", "job_id", r.Claimed.Job.ID, "handler", r.Claimed.Job.Handler,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	fn(context.Background(), r.Claimed.Job, r.Err)
}
