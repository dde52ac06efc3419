package engine

import (
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

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

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// asContinueAsNew extracts a continue-as-new request from a step error.
func asContinueAsNew(err error) (*ContinueAsNewError, bool) {
	var c *ContinueAsNewError
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}
