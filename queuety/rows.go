package queuety

import "github.com/queuety/queuety-go/store/driver"

// failureErr returns a recorded failure as an error: a *TimeoutError for timeouts
// (errors.As finds it, with its Kind), wrapped with NonRetryable when the
// failure was non-retryable.
func failureErr(f *driver.Failure) error {
	var err error
	if f.Category == driver.FailureTimeout {
		err = &TimeoutError{Kind: f.TimeoutKind, Deadline: f.DeadlineAt, Message: f.Message}
	} else {
		err = &failureError{f: f}
	}
	if f.NonRetryable {
		return NonRetryable(err)
	}
	return err
}

// failureError is a recorded non-timeout failure.
type failureError struct{ f *driver.Failure }

// Error returns the recorded message.
func (e *failureError) Error() string { return e.f.Message }

// ErrorClass returns the recorded error class.
func (e *failureError) ErrorClass() string { return e.f.ErrorClass }
