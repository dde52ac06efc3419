package queuetytype

import "time"

// Backoff computes how long a failed job waits before its next attempt.
// Use one of Queuety's strategies (BackoffExponential, BackoffFixed,
// BackoffLinear), an explicit list (queuety.BackoffSeconds), or
// Temporal-style exponential growth (queuety.BackoffPolicy). The backoff
// is stored with the job when it is dispatched, so a job keeps the rules
// it started with.
type Backoff interface {
	// Delay returns the wait after attempt (1-based) failed.
	Delay(attempt int) time.Duration
	// String describes the backoff for logs and the CLI.
	String() string
}

// MaxBackoff caps Queuety's exponential strategy.
const MaxBackoff = time.Hour

// BackoffStrategy is one of Queuety's named backoff strategies.
type BackoffStrategy string

// Queuety's named backoff strategies, stored in __queuety_runtime.backoff
// as these strings so Queuety PHP applies the same delays.
const (
	// BackoffExponential waits min(2^attempt × 30 s, 1 h): 60 s, 120 s,
	// 240 s, ... It is the default, as in Queuety.
	BackoffExponential BackoffStrategy = "exponential"
	// BackoffFixed waits 60 s after every failure.
	BackoffFixed BackoffStrategy = "fixed"
	// BackoffLinear waits attempt × 60 s.
	BackoffLinear BackoffStrategy = "linear"
)

// Delay implements Backoff.
func (s BackoffStrategy) Delay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	switch s {
	case BackoffFixed:
		return 60 * time.Second
	case BackoffLinear:
		return time.Duration(attempt) * 60 * time.Second
	default:
		if attempt >= 7 { // 2^7 × 30 s > 1 h
			return MaxBackoff
		}
		d := time.Duration(1<<attempt) * 30 * time.Second
		return min(d, MaxBackoff)
	}
}

// String implements Backoff.
func (s BackoffStrategy) String() string { return string(s) }

// ActivityTimeouts are the four per-job (or per-step) timeouts. Zero means
// "not set"; set values must be at least one second. Schedule-to-start,
// start-to-close and heartbeat timeouts retry while attempts remain;
// schedule-to-close does not.
type ActivityTimeouts struct {
	// ScheduleToStart bounds the wait in the queue before an attempt
	// starts; every retry gets a fresh window, counted from when it
	// becomes due.
	ScheduleToStart time.Duration
	// StartToClose bounds one attempt, from claim to result. The
	// handler's ctx carries this deadline.
	StartToClose time.Duration
	// ScheduleToClose bounds the whole job, all attempts and backoffs
	// included, from dispatch. It never resets and is always final.
	ScheduleToClose time.Duration
	// Heartbeat bounds the gap between heartbeats (queuety.Heartbeat)
	// while an attempt runs, counted from the claim.
	Heartbeat time.Duration
}

// Rate is a rate limit: at most Max starts in any Window.
type Rate struct {
	Max    int           // the most starts in a window
	Window time.Duration // the window's length
}

// JobResources are a job's admission settings: its concurrency group and
// that group's limit (the concurrency_group and concurrency_limit
// columns), its cost units (cost_units), and a rate limit for its handler
// (__queuety_runtime.rate_limit, which Queuety PHP workers honour too).
type JobResources struct {
	ConcurrencyGroup string // the group ("" for none)
	ConcurrencyLimit int    // 0: none stored on the row
	CostUnits        int    // used when CostUnitsSet; the default is 1
	CostUnitsSet     bool   // whether CostUnits was given
	RateLimit        Rate   // Max 0: none
}

// IsZero reports whether nothing is set.
func (r JobResources) IsZero() bool { return r == JobResources{} }

// JobSpec is the resolved form of a list of job options (queuety.JobOption).
// The builder uses it for per-step options; most code never needs it.
type JobSpec struct {
	Queue       string           // "" means the default (or the workflow's queue)
	Priority    Priority         // valid only when PrioritySet
	PrioritySet bool             // whether Priority was given
	Delay       time.Duration    // wait before the first attempt
	MaxAttempts int              // 0 means the default
	Backoff     Backoff          // nil means the client's default backoff
	DependsOn   int64            // run only after this job completed
	Unique      bool             // skip dispatch while an identical job is pending or processing
	Timeouts    ActivityTimeouts // the activity timeouts
	Resources   JobResources     // concurrency group, cost units, rate limit
}
