package queuety

import (
	"time"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/queuetytype"
)

// BackoffSeconds waits secs[attempt-1] seconds after a failure; when the
// attempts outrun the list, the last value repeats. Queuety PHP reads the
// same list. Negative values are rejected at dispatch.
func BackoffSeconds(secs ...int) queuetytype.Backoff { return jobruntime.BackoffSeconds(secs...) }

// BackoffPolicy waits initial × coefficient^(attempt-1), capped at
// maximum (Temporal's retry policy). Zero coefficient means 2; zero
// maximum means 100 × initial. Invalid values (initial below 1 ms,
// coefficient below 1, maximum below initial) are rejected at dispatch.
func BackoffPolicy(initial time.Duration, coefficient float64, maximum time.Duration) queuetytype.Backoff {
	return jobruntime.BackoffPolicy(initial, coefficient, maximum)
}

// ParseBackoff reads a backoff from the CLI: "exponential", "fixed",
// "linear", or a comma-separated list of seconds ("10,30,60").
func ParseBackoff(s string) (queuetytype.Backoff, error) { return jobruntime.ParseBackoff(s) }
