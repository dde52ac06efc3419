package queuety

import (
	"time"

	"github.com/queuety/queuety-go/internal/engine"
)

// Backoff computes how long a failed job waits before its next attempt.
// Use one of Queuety's strategies (BackoffExponential, BackoffFixed,
// BackoffLinear), an explicit list (BackoffSeconds), or Temporal-style
// exponential growth (BackoffPolicy). The backoff is stored with the job
// when it is dispatched, so a job keeps the rules it started with. Delay
// returns the wait after attempt (1-based) failed; String describes the
// backoff for logs and the CLI.
type Backoff = engine.Backoff

// BackoffStrategy is one of Queuety's named backoff strategies, stored in
// __queuety_runtime.backoff by name so Queuety PHP applies the same delays.
type BackoffStrategy = engine.BackoffStrategy

// Queuety's named backoff strategies.
const (
	// BackoffExponential waits min(2^attempt × 30 s, 1 h): 60 s, 120 s,
	// 240 s, ... It is the default, as in Queuety.
	BackoffExponential = engine.BackoffExponential
	// BackoffFixed waits 60 s after every failure.
	BackoffFixed = engine.BackoffFixed
	// BackoffLinear waits attempt × 60 s.
	BackoffLinear = engine.BackoffLinear
)

// BackoffSeconds waits secs[attempt-1] seconds after a failure; when the
// attempts outrun the list, the last value repeats. Queuety PHP reads the
// same list. Negative values are rejected at dispatch.
func BackoffSeconds(secs ...int) Backoff { return engine.BackoffSeconds(secs...) }

// BackoffPolicy waits initial × coefficient^(attempt-1), capped at
// maximum (Temporal's retry policy). Zero coefficient means 2; zero
// maximum means 100 × initial. Invalid values (initial below 1 ms,
// coefficient below 1, maximum below initial) are rejected at dispatch.
func BackoffPolicy(initial time.Duration, coefficient float64, maximum time.Duration) Backoff {
	return engine.BackoffPolicy(initial, coefficient, maximum)
}

// ParseBackoff reads a backoff from the CLI: "exponential", "fixed",
// "linear", or a comma-separated list of seconds ("10,30,60").
func ParseBackoff(s string) (Backoff, error) { return engine.ParseBackoff(s) }
