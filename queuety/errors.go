package queuety

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNotFound means the job, workflow or schedule does not exist.
	ErrNotFound = driver.ErrNotFound
	// ErrInvalidArgument means a caller passed a value the engine cannot
	// store or act on: an empty handler, a negative delay, a priority out of
	// range, a payload that is not a JSON object, and so on.
	ErrInvalidArgument = driver.ErrInvalidArgument
	// ErrInvalidTimeout means a timeout or deadline is below one second.
	ErrInvalidTimeout = engine.ErrInvalidTimeout
	// ErrInvalidState means the operation does not apply to the row's
	// current status, for example retrying a workflow that is running.
	ErrInvalidState = engine.ErrInvalidState
	// ErrStaleAttempt is returned when a completion, failure or heartbeat
	// comes from an attempt that no longer owns its job: the job was
	// recovered as stale, timed out, or was claimed again. Nothing is
	// changed. A worker treats it as "someone else owns this now", not as a
	// failure.
	ErrStaleAttempt = engine.ErrStaleAttempt
	// ErrDeadlineExceeded is the context cause seen by a step whose workflow
	// passed its execution deadline while the step was running.
	ErrDeadlineExceeded = engine.ErrDeadlineExceeded
	// ErrWorkerShutdown is the context cause seen by a handler that was
	// still running when the worker's shutdown grace period ended.
	ErrWorkerShutdown = engine.ErrWorkerShutdown
	// ErrLeaseLost is the context cause seen by a handler whose job was
	// taken away from it (recovered as stale, timed out, or its workflow
	// ended) while it ran.
	ErrLeaseLost = engine.ErrLeaseLost
)

// TimeoutKind names which deadline expired.
type TimeoutKind = driver.TimeoutKind

// The timeout kinds. The first four are activity (step or job) timeouts;
// the last two are workflow timeouts.
const (
	TimeoutScheduleToStart = driver.TimeoutScheduleToStart
	TimeoutStartToClose    = driver.TimeoutStartToClose
	TimeoutScheduleToClose = driver.TimeoutScheduleToClose
	TimeoutHeartbeat       = driver.TimeoutHeartbeat
	TimeoutExecution       = driver.TimeoutExecution
	TimeoutRun             = driver.TimeoutRun
)

// TimeoutError reports an expired deadline: Kind says which, Deadline
// when it was (UTC), Message is the text stored with the failure. A job or
// step that ends on a terminal timeout carries it as its error, a handler
// whose attempt timed out sees it as its context's cause, and errors.As
// finds it.
type TimeoutError = engine.TimeoutError

// PanicError is the failure recorded when a handler panics: Value is what
// was passed to panic and Stack the goroutine's stack. The worker
// recovers the panic; the job fails (and retries) like any other error,
// with the stack in the log row's error_trace.
type PanicError = engine.PanicError

// HandlerNotFoundError is returned when no handler is registered for a
// name (Name).
type HandlerNotFoundError = engine.HandlerNotFoundError

// ContinueAsNewError is what ContinueAsNew returns; State is the next
// run's public state.
type ContinueAsNewError = engine.ContinueAsNewError

// NonRetryable wraps err so that the job or step fails at once, without
// using its remaining attempts. It returns nil for a nil err.
func NonRetryable(err error) error { return engine.NonRetryable(err) }

// IsNonRetryable reports whether err, or any error it wraps, has a
// NonRetryable() bool method that returns true.
func IsNonRetryable(err error) bool { return engine.IsNonRetryable(err) }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func timeoutf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTimeout, fmt.Sprintf(format, args...))
}
