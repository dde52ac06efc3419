package queuety

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// NonRetryable wraps err so that the job or step fails at once, without
// using its remaining attempts. It returns nil for a nil err.
func NonRetryable(err error) error { return engine.NonRetryable(err) }

// IsNonRetryable reports whether err, or any error it wraps, has a
// NonRetryable() bool method that returns true.
func IsNonRetryable(err error) bool { return engine.IsNonRetryable(err) }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func timeoutf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidTimeout, fmt.Sprintf(format, args...))
}
