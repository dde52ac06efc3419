package worker

import (
	"log/slog"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Defaults for Worker options.
const (
	// ConcurrencyDefault is how many handlers run at once.
	ConcurrencyDefault = 10
	// BatchSizeMax caps how many jobs one claim takes.
	BatchSizeMax = 100
	// PollIntervalDefault is how long an idle worker waits between claims.
	PollIntervalDefault = time.Second
	// ShutdownTimeoutDefault is how long running handlers get to finish
	// after Run's context is cancelled, before their contexts are
	// cancelled with queuety.ErrWorkerShutdown.
	ShutdownTimeoutDefault = 30 * time.Second
	// HardStopTimeoutDefault is how long handlers get to return once their
	// contexts are cancelled at the end of the grace period. Handlers still
	// running after that are abandoned: Run returns a *ShutdownError, and
	// their jobs, whose claims are no longer renewed, are recovered by
	// lease expiry.
	HardStopTimeoutDefault = 10 * time.Second
	// LeaseIntervalDefault is how often a worker renews the claims of the
	// jobs it runs and checks that it still owns them.
	LeaseIntervalDefault = 3 * time.Second
	// AbandonGraceDefault is how long a handler gets to return once its
	// context is cancelled, for any reason but the worker's shutdown,
	// before the worker abandons it (see AbandonGrace).
	AbandonGraceDefault = 5 * time.Second
	// JitterDefault is the random spread added to maintenance intervals so
	// a fleet of workers does not sweep in lockstep.
	JitterDefault = 0.1
)

// Option configures a Worker.
type Option func(*config)

// Intervals configures the periodic maintenance of a long-running worker.
// A zero field takes its default; a negative one disables that task.
type Intervals struct {
	Deadlines time.Duration // default deadline.DeadlineInterval (60 s)
	WaitTimer time.Duration // default deadline.WaitTimerInterval (5 s)
	Watchdog  time.Duration // default deadline.WatchdogInterval (10 s)
	Stale     time.Duration // default deadline.StaleInterval (2 s)
	// ScheduleIdle caps how long the schedule tick sleeps: it wakes at the
	// next due schedule, when a client of this process saves a schedule,
	// or after ScheduleIdle to read the next due time again, which
	// notices schedules other processes saved (default
	// ScheduleIdleDefault, 10 s). While a firing is buffered behind its
	// schedule's previous run, the tick runs every 2 s at most.
	ScheduleIdle time.Duration
	// Jitter spreads each interval by ±Jitter × interval (default 0.1).
	Jitter float64
}

// ScheduleIdleDefault is the longest the schedule tick sleeps. While
// nothing is due, each wake-up reads the earliest next run (one statement
// through an index, outside a transaction) and ticks only when a schedule
// is due.
const ScheduleIdleDefault = 10 * time.Second

func (iv Intervals) withDefaults() Intervals {
	def := func(d, v time.Duration) time.Duration {
		if d == 0 {
			return v
		}
		return d
	}
	iv.Deadlines = def(iv.Deadlines, deadline.DeadlineInterval)
	iv.WaitTimer = def(iv.WaitTimer, deadline.WaitTimerInterval)
	iv.Watchdog = def(iv.Watchdog, deadline.WatchdogInterval)
	iv.Stale = def(iv.Stale, deadline.StaleInterval)
	iv.ScheduleIdle = def(iv.ScheduleIdle, ScheduleIdleDefault)
	if iv.Jitter == 0 {
		iv.Jitter = JitterDefault
	}
	if iv.Jitter < 0 {
		iv.Jitter = 0
	}
	return iv
}

type config struct {
	queues          []string
	concurrency     int
	batchSize       int
	claimGather     time.Duration // see ClaimGather
	pollInterval    time.Duration
	idlePoll        time.Duration // see IdlePollInterval
	shutdownTimeout time.Duration
	hardStopTimeout time.Duration
	leaseInterval   time.Duration
	abandonGrace    time.Duration // negative: never abandon
	maxAbandoned    int           // negative until New resolves the default
	stopUnhealthy   bool
	intervals       Intervals
	maintenance     bool
	retention       Retention // see retention.go
	noRetention     bool
	registry        *queuety.Registry
	logger          *slog.Logger
	hooks           Hooks
	webhooks        WebhookOptions
	limits          limitsConfig  // see limits.go
	noEager         bool          // see EagerSteps
	maxExecution    time.Duration // see MaxExecutionTime
	scale           scaleConfig   // see AdaptiveConcurrency
	holdBound       time.Duration // see HoldClaims; <= 0: off
	test            testHooks
}

// testHooks let the package's tests (export_test.go) follow the
// maintenance; each must be quick.
type testHooks struct {
	// started is called with the maintenance scheduler once it started.
	started func(gocron.Scheduler)
	// renewing is called by the lease keeper before each renewal, with
	// the number of running attempts it renews.
	renewing func(running int)
	// renewed is called once the lease keeper has acted on a renewal's
	// answer (renewing was called before it).
	renewed func(running int)
	// claimBackoff is called after each failed claim, with how long the
	// worker waits before the next.
	claimBackoff func(wait time.Duration)
	// tickArmed is called each time the schedule tick armed its timer,
	// with how long it sleeps.
	tickArmed func(wait time.Duration)
	// webhooksRefreshed is called after each read of the webhooks table,
	// with the number of webhooks.
	webhooksRefreshed func(n int)
	// scaleArmed is called each time the scaler armed its timer; scaled
	// after each resize decision, with the concurrency before and after.
	scaleArmed func()
	scaled     func(from, to int)
	// heartbeat is called after each write of the worker's registry row,
	// with the error (nil when it was written).
	heartbeat func(err error)
	// heldSettle is called by a held batch's settling once the batch is
	// due, before it collects the outcomes, with the batch's jobs; it may
	// block (a stalled settling).
	heldSettle func(jobs []*engine.Claimed)
	// heldTogether, when set, is called before each held claim: a result
	// over one makes its turn wait until that many held claims are
	// queued for it.
	heldTogether func() int
}

// Queues sets the queues to claim from, in priority order: a job in an
// earlier queue is always taken before one in a later queue (default
// "default").
func Queues(names ...string) Option { return func(c *config) { c.queues = names } }

// Concurrency sets how many handlers run at once (default 10).
func Concurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// BatchSize caps how many jobs one claim takes (default: the concurrency,
// at most 100). Claims never take more jobs than there are free slots.
func BatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// EagerSteps turns eager step handoff on or off (default on). With it on,
// when the worker records a workflow step whose next step it would claim
// at once (a plain single step, due now, in one of its queues, with its
// handler registered, no dependency, concurrency group, extra cost units
// or rate limit, its queue not paused) and it has a free slot, the next
// step's job is inserted already claimed by the worker in the same
// transaction and starts without a claim query. The job's row is the one
// a claim would have written. The branch jobs of a parallel step that
// follows it, and those a for-each step's expansion creates, are handed
// off under the same rules, one a free slot. Workers with admission
// limits configured (RateLimit, ConcurrencyGroup, cost budgets) never
// hand off.
func EagerSteps(on bool) Option { return func(c *config) { c.noEager = !on } }

// PollIntervalBusy is the first idle wait after a claim that found work;
// each empty claim doubles the wait up to the poll interval, so a worker
// fed by other processes claims their jobs within tens of milliseconds
// while they keep coming. Past the poll interval the worker is idle: it
// reads when its next job falls due and sleeps until then (see
// IdlePollInterval).
const PollIntervalBusy = 50 * time.Millisecond

// IdlePollIntervalDefault is the longest an idle worker waits before it
// looks for due jobs again while the cross-process wake-up is live.
const IdlePollIntervalDefault = 10 * time.Second

// IdlePollInterval sets the longest an idle worker waits before it looks
// for due jobs again while the cross-process wake-up is live (MySQL's and
// MariaDB's interrupted sleep, PostgreSQL's LISTEN): jobs dispatched by Go
// clients of the same database wake it at once, and a delayed job's due
// time is read in advance, so this bounds only how late it sees jobs that
// nothing wakes it for (Queuety PHP's, another database user's, a Galera
// node the dispatching process cannot reach). Default IdlePollIntervalDefault; while the wake-up is
// not live, the worker looks every PollInterval. A value below the poll
// interval counts as the poll interval.
func IdlePollInterval(d time.Duration) Option { return func(c *config) { c.idlePoll = d } }

// PollInterval sets the longest wait between empty claims after work,
// and how often an idle worker looks for due jobs while the cross-process
// wake-up is not live (default 1 s; a ±10% jitter is added).
func PollInterval(d time.Duration) Option { return func(c *config) { c.pollInterval = d } }

// ShutdownTimeout sets the grace period for running handlers after Run's
// context is cancelled (default 30 s).
func ShutdownTimeout(d time.Duration) Option { return func(c *config) { c.shutdownTimeout = d } }

// HardStopTimeout sets how long handlers get to return after their
// contexts are cancelled at the end of the grace period (default 10 s).
// After it, Run and RunOnce return without them (see ShutdownError).
func HardStopTimeout(d time.Duration) Option { return func(c *config) { c.hardStopTimeout = d } }

// LeaseInterval sets how often running jobs' claims are renewed and their
// ownership checked (default 3 s). It bounds how soon a handler learns that
// its workflow failed elsewhere, and must stay well below the client's
// lease timeout (queuety.WithLeaseTimeout, 10 s by default): a claim not
// renewed for that long is recovered.
func LeaseInterval(d time.Duration) Option { return func(c *config) { c.leaseInterval = d } }

// AbandonGrace sets how long a handler gets to return once its context is
// cancelled before the worker abandons it (default AbandonGraceDefault,
// 5 s, of real time; the worker checks every quarter of it, at most every
// second, so a handler is abandoned up to that much later). A handler's
// context is cancelled when its
// start-to-close timeout or its workflow's deadline passes, or when its
// job is taken away (its workflow failed, or the job was timed out or
// recovered elsewhere). A handler that ignores the cancellation past the
// grace period is abandoned:
//
//   - its attempt is recorded with the context's cause, as if the handler
//     had returned it then, so the job is retried or buried by the
//     normal timeout path (nothing is recorded when the job was already
//     taken away);
//   - its claim is no longer renewed;
//   - its slot stops counting against the concurrency, for up to
//     MaxAbandoned handlers at once;
//   - it is logged (handler, job, how long it ran), counted in Stats and
//     Health, and reported to an observe.AbandonObserver (metrics/prom's
//     queuety_handlers_abandoned gauge).
//
// Its goroutine cannot be stopped and runs on; when it returns, its result
// goes to the engine, which refuses it (the attempt no longer owns its
// job; counted in Stats.Stale), and the handler leaves the abandoned
// count. The worker's shutdown does not wait for abandoned handlers.
// Handlers cancelled by the shutdown itself are not abandoned: they get
// the hard-stop timeout (see Run). 0 abandons a handler as soon as its
// context is cancelled; a negative d turns abandonment off, so that a
// handler keeps its slot until it returns.
func AbandonGrace(d time.Duration) Option { return func(c *config) { c.abandonGrace = d } }

// MaxAbandoned sets how many abandoned handlers (see AbandonGrace) may run
// at once without counting against the concurrency (default: the
// concurrency). Past it the worker is unhealthy: it logs an error, each
// further abandoned handler holds its slot again, so the worker claims
// less work and none once every slot is held, Health reports it, and an
// observe.AbandonObserver hears it (metrics/prom's
// queuety_workers_unhealthy gauge). A goroutine that ignores its context
// can only be ended by ending the process, so a supervisor should restart
// an unhealthy worker (see StopWhenUnhealthy). A negative n counts as 0.
func MaxAbandoned(n int) Option { return func(c *config) { c.maxAbandoned = max(n, 0) } }

// StopWhenUnhealthy makes Run and RunOnce stop once the worker becomes
// unhealthy (see MaxAbandoned), as they do when their context is
// cancelled, and return an error that wraps ErrUnhealthy, so that a
// supervisor can restart the process (default off: the worker keeps
// running with the slots it has left).
func StopWhenUnhealthy(on bool) Option { return func(c *config) { c.stopUnhealthy = on } }

// Maintenance sets the sweep intervals of a long-running worker.
func Maintenance(iv Intervals) Option { return func(c *config) { c.intervals = iv } }

// NoMaintenance turns off the periodic sweeps in Run (RunOnce still runs
// them once) and the retention cleaner in Run and RunOnce. Use it when
// dedicated processes sweep and clean.
func NoMaintenance() Option { return func(c *config) { c.maintenance = false } }

// WithRegistry shares a handler registry between workers (default: the
// client's, queuety.WithRegistry, else a new one).
func WithRegistry(r *queuety.Registry) Option { return func(c *config) { c.registry = r } }

// WithLogger sets the logger (default: the client's).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Hooks are test and metrics callbacks. Each is optional and must be quick.
type Hooks struct {
	// Finished is called after an attempt's outcome is recorded, and
	// after a job is handed back because its handler or a middleware
	// returned queuety.Release (err is then the *queuety.ReleaseError).
	Finished func(job *queuetytype.Job, err error)
	// Swept is called after each maintenance sweep.
	Swept func(task string, n int, err error)
}

// WithHooks installs Hooks.
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }
