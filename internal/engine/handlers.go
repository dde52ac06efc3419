package engine

import (
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// Internal handler names: placeholder steps the engine runs itself.
const (
	HandlerDelay            = "__queuety_delay"
	HandlerWaitForSignal    = "__queuety_wait_for_signal"
	HandlerForEach          = "__queuety_for_each"
	HandlerRepeat           = "__queuety_repeat"
	HandlerRunWorkflow      = "__queuety_run_workflow"
	HandlerStartWorkflows   = "__queuety_start_workflows"
	HandlerWaitForWorkflows = "__queuety_wait_for_workflows"
)

// InternalHandlers lists the internal handlers every Go worker runs.
func InternalHandlers() []string {
	return []string{HandlerDelay, HandlerWaitForSignal, HandlerForEach, HandlerRepeat, HandlerRunWorkflow,
		HandlerStartWorkflows, HandlerWaitForWorkflows}
}

// IsInternalHandler reports whether name is reserved for the engine.
func IsInternalHandler(name string) bool {
	return len(name) >= 10 && name[:10] == "__queuety_"
}

// Defaults used when a job or workflow does not say otherwise. They match
// Queuety's.
const (
	DefaultQueue       = driver.DefaultQueue
	DefaultMaxAttempts = 3
	// MaxAttemptsLimit is the largest attempt count a row can hold
	// (Queuety stores attempts in a TINYINT UNSIGNED).
	MaxAttemptsLimit = 255
	// DefaultStaleTimeout is how long a claim may go without a renewal
	// before stale recovery takes the job back (Queuety's
	// QUEUETY_STALE_TIMEOUT). Go workers renew their claims while handlers
	// run, so only a dead or wedged process lets a claim go stale.
	DefaultStaleTimeout = 10 * time.Minute
	// DefaultLeaseTimeout is how long a Go worker's claim may go without
	// a renewal before the job is recovered. Go workers renew every few
	// seconds (worker.LeaseIntervalDefault), so a claim this old belongs
	// to a dead or wedged process. Claims made by Queuety PHP, which never
	// renews them, wait for the stale timeout.
	DefaultLeaseTimeout = 10 * time.Second
)
