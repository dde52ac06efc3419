package queuetytype

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNotFound means the job, workflow or schedule does not exist.
	ErrNotFound = errors.New("queuety: not found")
	// ErrInvalidArgument means a caller passed a value the engine cannot
	// store or act on: an empty handler, a negative delay, a priority out of
	// range, a payload that is not a JSON object, a malformed table prefix,
	// and so on.
	ErrInvalidArgument = errors.New("queuety: invalid argument")
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
	// ErrNoAttempt is returned by a heartbeat outside a handler.
	ErrNoAttempt = errors.New("queuety: no job attempt in context")
	// ErrNoWorkflowStep is returned when an artifact for the running step
	// is stored from a job that is not a workflow step.
	ErrNoWorkflowStep = errors.New("queuety: no workflow step is running in this context")
)

// TimeoutError reports an expired deadline. A job or step that ends on a
// terminal timeout carries it as its error, a handler whose attempt timed
// out sees it as its context's cause, and errors.As finds it.
type TimeoutError struct {
	Kind     TimeoutKind // which deadline expired
	Deadline time.Time   // when the deadline was (UTC)
	Message  string      // the human-readable message stored with the failure
}

// Error returns the stored message.
func (e *TimeoutError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s deadline expired at %s", e.Kind, e.Deadline.UTC().Format(time.RFC3339))
}

// PanicError is the failure recorded when a handler panics. The worker
// recovers the panic; the job fails (and retries) like any other error,
// with the stack in the log row's error_trace.
type PanicError struct {
	Value any    // what was passed to panic
	Stack string // the goroutine's stack at the panic
}

// Error describes the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// HandlerNotFoundError is returned when no handler is registered for a name.
type HandlerNotFoundError struct {
	Name string // the handler name nothing is registered for
}

// Error names the handler the way Queuety does.
func (e *HandlerNotFoundError) Error() string { return "Handler not found: " + e.Name }

// ContinueAsNewError is returned (as an error) by a step that restarts its
// workflow with a fresh history: see queuety.ContinueAsNew.
type ContinueAsNewError struct {
	State map[string]any // the next run's public state
}

// Error describes the request.
func (e *ContinueAsNewError) Error() string { return "queuety: continue as new" }
