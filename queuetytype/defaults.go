package queuetytype

import "time"

// Defaults a client and its workers use when they are not told otherwise.
const (
	// DefaultStaleTimeout is how long a claim may go without a renewal
	// before stale recovery takes the job back (Queuety's
	// QUEUETY_STALE_TIMEOUT). Go workers renew their claims while handlers
	// run, so only a dead or wedged process lets a claim go stale.
	DefaultStaleTimeout = 10 * time.Minute
	// DefaultLeaseTimeout is how long a Go worker's claim may go without a
	// renewal before the job is recovered (Go workers renew every few
	// seconds, so such a claim belongs to a dead process). Claims made by
	// Queuety PHP, which never renews them, wait for DefaultStaleTimeout.
	DefaultLeaseTimeout = 10 * time.Second
	// DefaultDeadlineHandoff is how long past a running workflow's
	// deadline a process whose workers lack its deadline handler leaves
	// the expiry to a worker that has it.
	DefaultDeadlineHandoff = 5 * time.Minute
	// DefaultMaxForEachItems caps the items one for-each step may expand
	// into when its workflow sets no max_for_each_items budget. A step
	// that plans more fails its workflow with a constraint error naming
	// the cap.
	DefaultMaxForEachItems = 10000
	// MaxSteps is the most steps a workflow can have (Queuety stores step
	// indexes in TINYINT UNSIGNED columns).
	MaxSteps = 255
	// DefaultArtifactKind is the kind of an artifact stored without one.
	DefaultArtifactKind = "json"
)

// Messages the engine stores as a job's error.
const (
	// ManualBuryMessage is the error message a manual bury stores when it
	// is given none: the text `wp queuety bury` stores.
	ManualBuryMessage = "Manually buried via CLI."
	// StaleMessage is the error stored on a job buried by stale recovery.
	StaleMessage = "Stale: worker died without completing."
)
