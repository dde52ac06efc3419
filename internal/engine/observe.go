package engine

import (
	"errors"

	"github.com/queuety/queuety-go/observe"
)

// ObservedJob describes the claimed attempt to an observer.
func (cj *Claimed) ObservedJob() observe.Job {
	j := cj.Job
	o := observe.Job{ID: j.ID, Queue: j.Queue, Handler: j.Handler, WorkflowID: j.WorkflowID, StepIndex: -1, Attempt: j.Attempts}
	if j.StepIndex != nil {
		o.StepIndex = *j.StepIndex
	}
	due := j.AvailableAt
	if j.CreatedAt.After(due) {
		due = j.CreatedAt
	}
	if !due.IsZero() && cj.ClaimedAt.After(due) {
		o.Wait = cj.ClaimedAt.Sub(due)
	}
	return o
}

// ErrorCategory classifies an attempt's error for observers; "" for nil.
func ErrorCategory(err error) observe.Category {
	var (
		pe *PanicError
		te *TimeoutError
		nf *HandlerNotFoundError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return observe.CategoryPanic
	case errors.Is(err, ErrWorkerShutdown):
		return observe.CategoryShutdown
	case errors.As(err, &te):
		return observe.CategoryTimeout
	case errors.Is(err, ErrDeadlineExceeded):
		return observe.CategoryDeadline
	case errors.Is(err, ErrLeaseLost):
		return observe.CategoryLeaseLost
	case errors.As(err, &nf):
		return observe.CategoryNotFound
	case IsNonRetryable(err):
		return observe.CategoryNonRetryable
	}
	return observe.CategoryError
}
