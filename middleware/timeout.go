package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
)

// Timeout fails an attempt whose handler runs longer than d (Queuety's
// Timeout middleware, which takes whole seconds; any positive duration
// works here). The handler's ctx expires after d, with a *TimeoutError
// as its cause (context.Cause); when the handler returns after that, the
// attempt fails with the *TimeoutError, whatever the handler returned,
// and is retried while attempts remain, as Queuety retries a
// TimeoutException.
//
// Go cannot interrupt a goroutine, so a handler that ignores its ctx
// keeps its worker slot until it returns; the attempt still fails then.
// The attempt's StartToClose timeout, if set, applies as well, and the
// earlier of the two wins. d <= 0 panics.
func Timeout(d time.Duration) queuety.Middleware {
	if d <= 0 {
		panic(fmt.Sprintf("middleware: Timeout(%s): the timeout must be positive", d))
	}
	return func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			te := &TimeoutError{Timeout: d}
			tctx, cancel := context.WithTimeoutCause(ctx, d, te)
			defer cancel()
			out, err := next(tctx, inv)
			if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && context.Cause(tctx) == te {
				if err != nil && !errors.Is(err, te) && !errors.Is(err, context.DeadlineExceeded) {
					return nil, fmt.Errorf("%w (handler returned: %v)", te, err)
				}
				return nil, te
			}
			return out, err
		}
	}
}

// TimeoutError is the failure of an attempt that ran past a Timeout
// middleware: Queuety's TimeoutException, with its message.
type TimeoutError struct {
	Timeout time.Duration
}

// Error returns Queuety's message: "Job exceeded maximum execution time
// of N seconds." (or of the duration, when it is not whole seconds).
func (e *TimeoutError) Error() string {
	if e.Timeout%time.Second == 0 {
		return fmt.Sprintf("Job exceeded maximum execution time of %d seconds.", int64(e.Timeout/time.Second))
	}
	return fmt.Sprintf("Job exceeded maximum execution time of %s.", e.Timeout)
}

// ErrorClass is the class Queuety records for this failure in the logs'
// error_class column.
func (e *TimeoutError) ErrorClass() string { return `Queuety\Exceptions\TimeoutException` }
