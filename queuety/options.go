package queuety

import (
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"

	"log/slog"
	"time"
)

// JobOption configures a dispatched job, or a workflow step in the builder.
type JobOption func(*queuetytype.JobSpec)

// ResolveJobOptions applies opts to an empty JobSpec.
func ResolveJobOptions(opts ...JobOption) queuetytype.JobSpec {
	var s queuetytype.JobSpec
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// OnQueue puts the job on a named queue (default "default").
func OnQueue(queue string) JobOption { return func(s *queuetytype.JobSpec) { s.Queue = queue } }

// WithPriority sets the priority (PriorityLow by default).
func WithPriority(p queuetytype.Priority) JobOption {
	return func(s *queuetytype.JobSpec) { s.Priority, s.PrioritySet = p, true }
}

// Delay makes the job due after d. Negative delays are rejected.
func Delay(d time.Duration) JobOption { return func(s *queuetytype.JobSpec) { s.Delay = d } }

// MaxAttempts sets how many attempts the job gets (default 3, at most 255).
func MaxAttempts(n int) JobOption { return func(s *queuetytype.JobSpec) { s.MaxAttempts = n } }

// WithBackoff sets the wait between attempts.
func WithBackoff(b queuetytype.Backoff) JobOption {
	return func(s *queuetytype.JobSpec) { s.Backoff = b }
}

// Retry sets the attempt count and, optionally, the backoff.
func Retry(maxAttempts int, backoff ...queuetytype.Backoff) JobOption {
	return func(s *queuetytype.JobSpec) {
		s.MaxAttempts = maxAttempts
		if len(backoff) > 0 {
			s.Backoff = backoff[0]
		}
	}
}

// DependsOn makes the job wait until job id has completed (Queuety's
// depends_on): a plain job or a workflow step's job (JobInfoFrom gives a
// handler its JobID). The completion wakes an idle worker for it. A job
// whose dependency is buried never runs.
func DependsOn(id int64) JobOption { return func(s *queuetytype.JobSpec) { s.DependsOn = id } }

// Unique skips the dispatch when a unique job with the same handler and the
// same payload is pending or processing, and returns that job's id
// instead. Payloads match whatever the order of their object keys, at any
// depth (list elements keep their order), so a Go map finds the job a
// Queuety PHP array built in any order wrote. The stored payload_hash is
// Queuety PHP's, the sha256 of the stored payload, so PHP's ->unique()
// finds a Go job when its array lists the keys in the order Go wrote them:
// sorted for a map, in field order for a struct, as given for a
// json.RawMessage.
func Unique() JobOption { return func(s *queuetytype.JobSpec) { s.Unique = true } }

// ScheduleToStart bounds how long each attempt may wait in the queue.
func ScheduleToStart(d time.Duration) JobOption {
	return func(s *queuetytype.JobSpec) { s.Timeouts.ScheduleToStart = d }
}

// StartToClose bounds one attempt, from claim to result.
func StartToClose(d time.Duration) JobOption {
	return func(s *queuetytype.JobSpec) { s.Timeouts.StartToClose = d }
}

// ScheduleToClose bounds the whole job, retries included. It is final.
func ScheduleToClose(d time.Duration) JobOption {
	return func(s *queuetytype.JobSpec) { s.Timeouts.ScheduleToClose = d }
}

// HeartbeatTimeout bounds the gap between heartbeats of a running attempt.
func HeartbeatTimeout(d time.Duration) JobOption {
	return func(s *queuetytype.JobSpec) { s.Timeouts.Heartbeat = d }
}

// Option configures a Client.
type Option func(*config)

type config struct {
	clock        Clock
	logger       *slog.Logger
	skipMigrate  bool
	backoff      queuetytype.Backoff
	staleTimeout time.Duration
	leaseTimeout time.Duration
	handoff      time.Duration
	wakeKey      string // the DSN Open was given (engine.Config.WakeKey)
	observer     observe.Observer
	// phpBatchQueue is WithPHPBatchCallbacks' queue (batch.go).
	phpBatchQueue string
	// phpWorkflowQueue is WithPHPCallbacks' queue for compensations and
	// cancel callbacks (batch.go).
	phpWorkflowQueue string
	// maxForEachItems is WithMaxForEachItems' cap (0: the default).
	maxForEachItems int
	// registry is WithRegistry's registry (defaults.go).
	registry *Registry
}

func newConfig(opts []Option) config {
	c := config{
		clock:        SystemClock{},
		logger:       slog.Default(),
		backoff:      queuetytype.BackoffExponential,
		staleTimeout: queuetytype.DefaultStaleTimeout,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithClock replaces the wall clock, for tests.
func WithClock(c Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the slog logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(cfg *config) { cfg.logger = l } }

// SkipMigrate opens the store without applying migrations. Use it where the
// schema is managed separately (queuety-worker migrate).
func SkipMigrate() Option { return func(cfg *config) { cfg.skipMigrate = true } }

// WithDefaultBackoff sets the backoff for jobs that do not carry their own
// (default BackoffExponential, as in Queuety).
func WithDefaultBackoff(b queuetytype.Backoff) Option { return func(cfg *config) { cfg.backoff = b } }

// WithLeaseTimeout sets how long a Go worker's claim may go without a
// renewal before stale recovery takes the job back (default
// DefaultLeaseTimeout, capped at the stale timeout). Keep it at several
// worker lease intervals.
func WithLeaseTimeout(d time.Duration) Option {
	return func(cfg *config) { cfg.leaseTimeout = d }
}

// WithDeadlineHandoff sets how long past a running workflow's deadline
// this process's sweeps leave its expiry to a worker that has its deadline
// handler, when none of this process's workers registered it (default
// DefaultDeadlineHandoff). In a fleet shared with Queuety PHP this is what
// lets PHP's sweep call a PHP deadline handler; after the handoff the
// workflow is expired here and its handler enqueued as a job. A negative d
// expires at once.
func WithDeadlineHandoff(d time.Duration) Option {
	return func(cfg *config) { cfg.handoff = d }
}

// WithObserver installs an instrumentation observer (see package observe;
// metrics/prom and metrics/otel provide them): it hears this client's
// dispatches, and the workers and sweeps built on this client report their
// claims, attempts and sweeps to it. Combine several with observe.Multi.
// The default is none, which costs nothing.
func WithObserver(o observe.Observer) Option {
	return func(cfg *config) { cfg.observer = o }
}

// WithStaleTimeout sets how old a claim must be, without renewal, before
// stale recovery takes the job back (default DefaultStaleTimeout).
func WithStaleTimeout(d time.Duration) Option {
	return func(cfg *config) { cfg.staleTimeout = d }
}

// WithMaxForEachItems sets the cap on the items one for-each step of a
// workflow without a MaxForEachItems budget may expand into, for the
// workers built on this client (default DefaultMaxForEachItems); n < 0
// removes it. A workflow's own budget (builder's MaxForEachItems) replaces
// the cap, above or below it. Queuety PHP workers apply only budgets.
func WithMaxForEachItems(n int) Option {
	return func(cfg *config) { cfg.maxForEachItems = n }
}
