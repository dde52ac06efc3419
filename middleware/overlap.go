package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/locks"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Defaults of WithoutOverlapping.
const (
	// ExpireAfterDefault is how long a WithoutOverlapping lock lives
	// before it is taken over even though its holder has not released it
	// (Queuety's release_after default, 300 s), so a crashed worker does
	// not block the key for good.
	ExpireAfterDefault = 300 * time.Second
	// ReleaseDelayDefault is how long a job that found its key locked
	// waits before it is due again.
	ReleaseDelayDefault = 5 * time.Second
)

// OverlapOption configures WithoutOverlapping.
type OverlapOption func(*overlap)

type overlap struct {
	expire time.Duration
	delay  time.Duration
	skip   bool
}

// ExpireAfter sets how long the lock lives (Queuety's release_after,
// whole seconds; default ExpireAfterDefault). A lock older than that is
// deleted by the next invocation that wants it, even while its holder
// still runs, so set it above the handler's longest run. d <= 0 means
// the lock never expires.
func ExpireAfter(d time.Duration) OverlapOption { return func(o *overlap) { o.expire = d } }

// ReleaseDelay sets how long a job that found its key locked waits before
// it is due again (default ReleaseDelayDefault; due times are whole
// seconds; 0 makes it due at once).
func ReleaseDelay(d time.Duration) OverlapOption { return func(o *overlap) { o.delay = max(d, 0) } }

// SkipWhenLocked makes an invocation that finds its key locked return
// without running the handler, so the job completes without running
// (what Queuety's documentation promises: "the job is silently skipped"),
// instead of being handed back.
func SkipWhenLocked() OverlapOption { return func(o *overlap) { o.skip = true } }

// WithoutOverlapping runs at most one invocation per key at a time, across
// every worker and process on the database, Queuety PHP's included: it
// takes the key's row in Queuety's locks table (lock_key = key, a random
// 32-hex owner, expiring after ExpireAfter), exactly as Queuety's
// WithoutOverlapping middleware does, runs the handler, and deletes the row
// afterwards. A PHP job holding the key blocks Go invocations and the
// reverse.
//
// When the key is locked, the job is handed back (queuety.Release), due
// again after ReleaseDelay, without using an attempt; with SkipWhenLocked
// it completes without running. (Queuety PHP skips the handler and leaves
// the job processing, so its stale recovery retries it ten minutes later,
// using an attempt.)
//
// key is used as given. Invocations of different handlers that use the
// same key exclude each other; derive keys from the payload with
// WithoutOverlappingBy. The lock is not renewed while the handler runs.
func WithoutOverlapping(key string, opts ...OverlapOption) queuety.Middleware {
	return WithoutOverlappingBy(func(*queuety.Invocation) string { return key }, opts...)
}

// WithoutOverlappingBy is WithoutOverlapping with the key computed for
// each invocation, for example from its payload ("import_supplier_" + id).
// An empty key fails the attempt without retries.
func WithoutOverlappingBy(key func(inv *queuety.Invocation) string, opts ...OverlapOption) queuety.Middleware {
	o := overlap{expire: ExpireAfterDefault, delay: ReleaseDelayDefault}
	for _, opt := range opts {
		opt(&o)
	}
	return lockedBy("WithoutOverlapping", key, o)
}

// lockedBy runs the handler while holding the lock named by key (name is
// the middleware's, for messages): WithoutOverlapping and UniqueJob.
func lockedBy(name string, key func(inv *queuety.Invocation) string, o overlap) queuety.Middleware {
	return func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			k := key(inv)
			if k == "" {
				return nil, errEmptyKey(name)
			}
			e, err := engineOf(inv)
			if err != nil {
				return nil, err
			}
			owner := locks.NewOwner()
			// The lock is bookkeeping of the attempt: taking and releasing
			// it must not fail because the handler's ctx ended.
			bg := context.WithoutCancel(ctx)
			ok, err := e.Locks().Acquire(bg, k, owner, o.expire)
			if err != nil {
				return nil, err
			}
			if !ok {
				if o.skip {
					return nil, nil
				}
				return nil, &queuety.ReleaseError{Delay: o.delay, Reason: fmt.Sprintf("%s: key %q is locked", name, k)}
			}
			// Released also when the handler panics (the worker recovers
			// the panic outside the middleware).
			defer func() {
				if _, rerr := e.Locks().Release(bg, k, owner); rerr != nil {
					// An expiring lock goes on its own; the handler's result stands.
					e.Logger().Warn("queuety: release "+name+" lock", "key", k, "err", rerr)
				}
			}()
			return next(ctx, inv)
		}
	}
}

// Throttle defaults (Queuety's ThrottlesExceptions defaults).
const (
	ThrottleMaxDefault    = 10
	ThrottleWindowDefault = 10 * time.Minute
)

// ThrottlesExceptions stops calling a handler after it failed maxExceptions times
// within window: the count lives in Queuety's locks table under
// "throttle_exceptions:<handler>", shared by every worker, Queuety PHP's
// ThrottlesExceptions included. While the count is at maxExceptions, invocations
// fail at once with a *ThrottledError (using an attempt, with the job's
// backoff, as Queuety does) instead of running. Every handler error other
// than a queuety.Release adds one, and pushes the window's end to now +
// window. A count whose window has passed starts again at 1 (Queuety keeps
// adding to it). maxExceptions <= 0 and window <= 0 take the defaults.
func ThrottlesExceptions(maxExceptions int, window time.Duration) queuety.Middleware {
	if maxExceptions <= 0 {
		maxExceptions = ThrottleMaxDefault
	}
	if window <= 0 {
		window = ThrottleWindowDefault
	}
	return func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (out queuety.State, err error) {
			e, err := engineOf(inv)
			if err != nil {
				return nil, err
			}
			key := "throttle_exceptions:" + inv.Job.Handler
			bg := context.WithoutCancel(ctx)
			n, err := e.Locks().Count(bg, key)
			if err != nil {
				return nil, err
			}
			if n >= int64(maxExceptions) {
				return nil, &ThrottledError{Handler: inv.Job.Handler, Count: n, Window: window}
			}
			panicked := true
			defer func() {
				var re *queuety.ReleaseError
				if panicked || (err != nil && !errors.As(err, &re)) {
					if cerr := e.Locks().Increment(bg, key, window); cerr != nil {
						e.Logger().Warn("queuety: count handler exception", "key", key, "err", cerr)
					}
				}
			}()
			out, err = next(ctx, inv)
			panicked = false
			return out, err
		}
	}
}

// ThrottledError is the failure of an invocation that ThrottlesExceptions
// did not run: Queuety's RuntimeException, with its message.
type ThrottledError struct {
	Handler string
	Count   int64
	Window  time.Duration
}

// Error returns Queuety's message: "Too many exceptions for <handler>
// (<n> in <m> minutes). Throttled."
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("Too many exceptions for %s (%d in %d minutes). Throttled.", e.Handler, e.Count, int64(e.Window/time.Minute))
}

// ErrorClass is the class Queuety records for this failure.
func (e *ThrottledError) ErrorClass() string { return "RuntimeException" }

// engineOf returns the engine of the invocation's client.
func engineOf(inv *queuety.Invocation) (*engine.Engine, error) {
	if inv == nil || inv.Client == nil {
		return nil, fmt.Errorf("%w: the middleware needs the Invocation's Client (set by the worker)", queuetytype.ErrInvalidArgument)
	}
	return clientseam.Engine(inv.Client), nil
}
