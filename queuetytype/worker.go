package queuetytype

import "time"

// Worker is one worker process in the worker registry, the Go engine's
// table of running workers ({prefix}queuety_go_workers; Queuety PHP has
// none and ignores it). A worker registers when Run or RunOnce starts,
// renews its row at every lease interval, and removes it when it stops
// cleanly. A worker that stopped renewing (killed, or cut off from the
// database) is Gone after GoneAfter missed renewals, and its row is
// removed by a live worker after WorkerRetention.
type Worker struct {
	// ID names the worker process for as long as it runs: host, process
	// id and a random suffix ("web-1-4242-9f3c2a").
	ID string
	// Host and PID are the machine (os.Hostname) and process the worker
	// runs in.
	Host string
	PID  int
	// Version is the version of this module the worker was built with
	// (queuety.Version).
	Version string
	// Queues are the queues the worker claims from, in priority order.
	Queues []string
	// Handlers are the names of the handlers the worker has registered
	// (not the engine's internal ones), sorted; it claims only jobs of
	// these.
	Handlers []string
	// Concurrency is how many handlers the worker runs at once (with
	// adaptive concurrency, the most it may run).
	Concurrency int
	// Jobs are the ids of the jobs whose handlers the worker was running
	// at its last renewal, sorted. A job claimed or finished since then
	// shows at the next renewal.
	Jobs []int64
	// StartedAt is when the worker registered; LastHeartbeat when it last
	// renewed its row (UTC, engine clock).
	StartedAt     time.Time
	LastHeartbeat time.Time
	// HeartbeatInterval is how often the worker renews its row.
	HeartbeatInterval time.Duration
	// Gone reports that the worker missed GoneAfter renewals at the time
	// it was read: it was killed or lost the database. Its Jobs are
	// recovered as stale claims when their leases expire. It is decided
	// with the reader's clock, so the hosts' clocks must agree to well
	// within GoneAfter heartbeat intervals.
	Gone bool
}

// GoneAfter is how many renewals a worker may miss before the registry
// shows it as gone.
const GoneAfter = 3

// WorkerRetention is how long a worker that stopped renewing stays in the
// registry (shown as gone) before a live worker removes its row.
const WorkerRetention = time.Hour
