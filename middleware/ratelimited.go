package middleware

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// RateLimited runs a handler at most max times in any window of the given
// length, counted across every worker on the database: Queuety's
// RateLimited middleware (new RateLimited(max: 60, window: 60)), keyed, as
// there, by the handler's name.
//
// Before it calls the handler it takes an execution slot in one
// transaction that locks the handler's limit row, so two workers never
// both take the last one. It counts the executions Go's RateLimited
// admitted in the window and those Queuety PHP workers started (their
// 'started' log rows for the handler); Queuety PHP's RateLimited counts
// the handler's 'completed' log rows, which Go's successful executions
// write too, so the limit holds for a mixed fleet with the slack of PHP's
// five-second refresh. An execution counts from the moment it is admitted,
// whether it then succeeds or fails (Queuety PHP counts successes only).
//
// When the window is full, the job is handed back (queuety.Release), due
// again when the oldest counted execution leaves the window, without
// running and without using an attempt; the release's reason is Queuety's
// message ("Rate limit exceeded for '<handler>': max <max> executions per
// <window> seconds."). Queuety PHP throws RateLimitExceededException
// instead, which uses an attempt. max < 1 or window <= 0 panics, since
// that is a programming error.
func RateLimited(max int, window time.Duration) queuety.Middleware {
	if max < 1 || window <= 0 {
		panic(fmt.Sprintf("middleware: RateLimited(%d, %s): max must be at least 1 and the window positive", max, window))
	}
	return func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			e, err := engineOf(inv)
			if err != nil {
				return nil, err
			}
			ok, wait, err := e.RateSlot(context.WithoutCancel(ctx), inv.Job.Handler, inv.Job.JobID, inv.Job.Attempt, max, window)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, &queuety.ReleaseError{Delay: wait, Reason: RateLimitMessage(inv.Job.Handler, max, window)}
			}
			return next(ctx, inv)
		}
	}
}

// RateLimitMessage is Queuety's RateLimitExceededException message for
// handler: "Rate limit exceeded for '<handler>': max <max> executions per
// <window> seconds." (the window in whole seconds, rounded up).
func RateLimitMessage(handler string, max int, window time.Duration) string {
	secs := int64((window + time.Second - 1) / time.Second)
	return fmt.Sprintf("Rate limit exceeded for '%s': max %d executions per %d seconds.", handler, max, secs)
}

// UniqueJob runs at most one invocation per key at a time, across every
// worker and process on the database, Queuety PHP's included: Queuety's
// UniqueJob middleware. It inserts the key's row in Queuety's locks table
// (a random 32-hex owner, no expiry, as Queuety writes it), runs the
// handler, and deletes the row afterwards, also when the handler fails or
// panics. An invocation that finds the key taken is skipped: its job
// completes without running, as in Queuety ("the job is silently
// skipped, not retried").
//
// key "" means the handler's name (Queuety's default, the job's class).
// Invocations of different handlers with the same key exclude each other.
// The row has no expiry: a worker that dies while the handler runs leaves
// it until an operator deletes it, as in Queuety. WithoutOverlapping is
// the variant whose lock expires and whose blocked jobs are handed back.
func UniqueJob(key string) queuety.Middleware {
	return UniqueJobBy(func(inv *queuety.Invocation) string {
		if key != "" {
			return key
		}
		return inv.Job.Handler
	})
}

// UniqueJobBy is UniqueJob with the key computed for each invocation, for
// example from its payload. An empty key fails the attempt without
// retries.
func UniqueJobBy(key func(inv *queuety.Invocation) string) queuety.Middleware {
	return lockedBy("UniqueJob", key, overlap{skip: true})
}

// errEmptyKey is the failure of an invocation whose lock key is empty.
func errEmptyKey(name string) error {
	return queuety.NonRetryable(fmt.Errorf("%w: %s: empty lock key", queuetytype.ErrInvalidArgument, name))
}
