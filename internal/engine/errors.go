package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNotFound means the job, workflow or schedule does not exist.
	ErrNotFound = driver.ErrNotFound
	// ErrInvalidTimeout means a timeout or deadline is below one second.
	ErrInvalidTimeout = errors.New("queuety: invalid timeout")
	// ErrInvalidState means the operation does not apply to the row's
	// current status, for example retrying a workflow that is running.
	ErrInvalidState = errors.New("queuety: invalid state")
	// ErrStaleAttempt is returned when a completion, failure or heartbeat
	// comes from an attempt that no longer owns its job: the job was
	// recovered as stale, timed out, or was claimed again. Nothing is
	// changed. A worker treats it as "someone else owns this now", not as a
	// failure.
	ErrStaleAttempt = errors.New("queuety: stale attempt")

	// ErrDeadlineExceeded is the context cause seen by a step whose workflow
	// passed its execution deadline while the step was running.
	ErrDeadlineExceeded = errors.New("Deadline exceeded")
	// ErrWorkerShutdown is the context cause seen by a handler that was
	// still running when the worker's shutdown grace period ended.
	ErrWorkerShutdown = errors.New("queuety: worker shutting down")
	// ErrLeaseLost is the context cause seen by a handler whose job was
	// taken away from it (recovered as stale, timed out, or its workflow
	// ended) while it ran.
	ErrLeaseLost = errors.New("queuety: job no longer owned by this attempt")
)

// TimeoutError reports an expired deadline. A job or step that ends on a
// terminal timeout carries it as its error, and errors.As finds it.
type TimeoutError struct {
	Kind     driver.TimeoutKind
	Deadline time.Time // when the deadline was (UTC)
	Message  string    // the human-readable message stored with the failure
}

// Error returns the stored message.
func (e *TimeoutError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s deadline expired at %s", e.Kind, e.Deadline.UTC().Format(time.RFC3339))
}

// nonRetryableError marks an error as final.
type nonRetryableError struct{ err error }

// Error returns the wrapped error's message.
func (e *nonRetryableError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *nonRetryableError) Unwrap() error { return e.err }

// NonRetryable marks the error as final.
func (e *nonRetryableError) NonRetryable() bool { return true }

// NonRetryable wraps err so that the job or step fails at once, without
// using its remaining attempts. It returns nil for a nil err.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &nonRetryableError{err: err}
}

// IsNonRetryable reports whether err, or any error it wraps, has a
// NonRetryable() bool method that returns true.
func IsNonRetryable(err error) bool {
	var nr interface{ NonRetryable() bool }
	return errors.As(err, &nr) && nr.NonRetryable()
}

// PanicError is the failure recorded when a handler panics. The worker
// recovers the panic; the job fails (and retries) like any other error,
// with the stack in the log row's error_trace.
type PanicError struct {
	Value any
	Stack string
}

// Error describes the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// HandlerNotFoundError is returned when no handler is registered for a name.
type HandlerNotFoundError struct{ Name string }

// Error names the handler the way Queuety does.
func (e *HandlerNotFoundError) Error() string { return "Handler not found: " + e.Name }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func timeoutf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTimeout, fmt.Sprintf(format, args...))
}

// ContinueAsNewError is returned (as an error) by a step that restarts its
// workflow: see ContinueAsNew.
type ContinueAsNewError struct{ State State }

// Error describes the request.
func (e *ContinueAsNewError) Error() string { return "queuety: continue as new" }

// asContinueAsNew extracts a continue-as-new request from a step error.
func asContinueAsNew(err error) (*ContinueAsNewError, bool) {
	var c *ContinueAsNewError
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}
