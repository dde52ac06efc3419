// Package worker claims jobs and workflow steps, runs their handlers and
// records the outcomes.
//
// A Worker claims due jobs in batches (one round trip for many jobs), runs
// each handler at once, concurrently with the others, up to its
// concurrency (on goroutines reused from job to job), and records
// successes in batches: plain jobs with one CompleteJobs call, workflow
// steps (and the workflows they advance) with one CompleteSteps call.
// Failures are recorded one at a time. While handlers run, the worker renews
// their claims and cancels a handler's context when its job is taken away
// (its workflow failed, it timed out, or it was recovered as stale). A
// handler that ignores its cancelled context past the abandon grace is
// abandoned: its attempt is recorded as a timeout would be and its slot
// freed (see AbandonGrace).
//
// A worker only claims jobs whose handler it has registered (plus the
// engine's internal step handlers), so a job is never buried because one
// worker lacks its handler: it waits for a worker that has it. Queues
// shared with Queuety PHP workers should still be partitioned, because PHP
// workers claim every handler.
//
// Run works until its context is cancelled, running the periodic sweeps of
// package deadline on a gocron schedule. RunOnce drains due work within a
// time budget and returns, for workers started by cron.
//
// The sweeps and the schedule tick run on the client's clock when it can
// drive timers (TimerClock; queuety.FakeClock can), so a test moves a fake
// clock forward instead of waiting for them.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/jonboulle/clockwork"
	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Worker runs handlers for claimed jobs. Create it with New, register
// handlers, then call Run or RunOnce (not both at once).
type Worker struct {
	c    *queuety.Client
	wake *engine.WakeSub // the engine's wake-ups while Run runs (nil: none)
	// woken is set when a wake-up ended the claim loop's last wait (the
	// claim loop's goroutine only).
	woken bool
	// handlers is this worker's registration with the engine, which holds
	// it weakly; this field keeps it alive while the worker exists.
	registration *engine.WorkerHandlers
	engine       *engine.Engine
	sweeper      *deadline.Sweeper
	cfg          config
	reg          *queuety.Registry
	funcs        engine.Functions // reg's reducers and repeat conditions, as the engine reads them
	log          *slog.Logger
	obs          observe.Observer // the client's; nil: no instrumentation
	// timers is the clock the maintenance runs on: the engine's clock when
	// it drives timers (engineTimers), real time otherwise.
	timers       clockwork.Clock
	engineTimers bool
	hooks        *webhooks // webhook delivery

	running atomic.Bool

	mu sync.Mutex
	// busy counts running handlers. inflight holds the newest attempt of
	// each running job, so it can hold fewer: a job claimed again while an
	// earlier attempt of it still runs replaces that attempt's entry.
	busy     int
	inflight map[int64]*attempt
	// replaced holds the running attempts whose entries in inflight a
	// later attempt of the same job took (see launch).
	replaced map[*attempt]struct{}
	// abandoned holds the attempts whose handlers the worker abandoned and
	// that still run (see abandon.go); they are in neither busy nor
	// inflight.
	abandoned map[*attempt]struct{}
	// stopRun stops the Run or RunOnce under way (StopWhenUnhealthy); nil
	// when neither runs.
	stopRun context.CancelCauseFunc
	// recording holds the attempts whose successes were handed to the
	// completer and are not yet recorded (a step's next job exists only
	// once its success is), so the lease keeper renews their claims until
	// they are: a completion slowed by lock waits must not let them go
	// stale and run again.
	recording map[*engine.Claimed]struct{}
	// stopping is set once the worker stops claiming: the completer then
	// takes no job eagerly (see eager.go).
	stopping bool
	freed    chan struct{}
	wg       sync.WaitGroup
	results  chan *engine.Result
	// resultsMu guards sending on results against closing it: a handler
	// that outlives the shutdown finds resultsClosed and records its
	// result itself.
	resultsMu     sync.RWMutex
	resultsClosed bool
	// serial is set on stores with serial writers (serial.go).
	serial *serialWrites
	// lastFinish is when a handler last finished (Unix nanoseconds).
	lastFinish atomic.Int64
	// runners run the started jobs (runners.go).
	runners runners
	// writes is when this process's database writes last failed
	// (holdback.go).
	writes writeHealth

	stats counters
	// limit is the concurrency now: cfg.concurrency, or with
	// AdaptiveConcurrency its current size (scale.go).
	limit atomic.Int64
	// registryID and host name the worker in the worker registry
	// (registry.go).
	registryID, host string
	// gate holds the sweep gate's last read (sweepgate.go).
	gate sweepGate
	// heldWaiting counts the held jobs whose handlers returned and whose
	// held claim is not written yet; they keep their slots (hold.go).
	heldWaiting atomic.Int64
}

type attempt struct {
	cj     *engine.Claimed
	cancel context.CancelCauseFunc
	// state says what settled the attempt first: its handler's return or
	// the worker abandoning the handler (abandon.go).
	state atomic.Int32
	// recording is held while an abandoned attempt's outcome is being
	// recorded; the handler's late return waits for it.
	recording sync.WaitGroup
	// watched is set once the fields below are, just before the handler
	// is called; the abandoner reads them only then.
	watched atomic.Bool
	// What the abandonment needs of the running handler: its context and
	// the attempt's (JobStart's when observed), the observed job, and
	// when the handler started on the engine clock and the wall clock.
	hctx, ctx context.Context
	job       observe.Job
	startedAt time.Time
	t0        time.Time
	// doneSeen is when the abandoner first saw hctx done (its goroutine
	// alone uses it).
	doneSeen time.Time
	// hold is the held claim the attempt's job came with (nil: claimed).
	hold *heldBatch
}

// The states of an attempt.
const (
	attemptRunning   int32 = iota // the handler runs (or has yet to start)
	attemptReturned               // the handler returned first
	attemptAbandoned              // the worker abandoned the handler first
)

type counters struct {
	claimed, succeeded, failed, stale, handedBack, eager, abandoned atomic.Int64
}

// Stats counts what a worker did.
type Stats struct {
	Claimed    int64 // jobs claimed (Eager included)
	Eager      int64 // next steps' and branches' jobs taken by eager handoff, without a claim query (see EagerSteps)
	Succeeded  int64 // attempts recorded as successful
	Failed     int64 // attempts recorded as failed (retried or buried)
	Stale      int64 // results rejected because the attempt lost its job
	HandedBack int64 // claimed jobs returned unstarted, interrupted by shutdown, or released (queuety.Release)
	// Abandoned counts the handlers abandoned because they ignored their
	// cancelled context past the abandon grace (see AbandonGrace); their
	// attempts count in Failed (or Stale) too.
	Abandoned int64
	Swept     deadline.Report
	// SchedulesFired counts the jobs and workflows the schedule tick
	// dispatched (RunOnce).
	SchedulesFired int
}

// New returns a worker for client c.
func New(c *queuety.Client, opts ...Option) *Worker {
	cfg := config{
		queues:          []string{queuetytype.DefaultQueue},
		concurrency:     ConcurrencyDefault,
		pollInterval:    PollIntervalDefault,
		idlePoll:        IdlePollIntervalDefault,
		shutdownTimeout: ShutdownTimeoutDefault,
		hardStopTimeout: HardStopTimeoutDefault,
		leaseInterval:   LeaseIntervalDefault,
		abandonGrace:    AbandonGraceDefault,
		maxAbandoned:    -1,
		maintenance:     true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.scale.max > 0 {
		cfg.concurrency = cfg.scale.max
		if cfg.scale.interval <= 0 {
			cfg.scale.interval = ScaleIntervalDefault
		}
		if !cfg.scale.idleSet {
			cfg.scale.idleGrace = ScaleIdleGraceDefault
		}
	}
	cfg.concurrency = max(cfg.concurrency, 1)
	if cfg.maxAbandoned < 0 {
		cfg.maxAbandoned = cfg.concurrency
	}
	if cfg.batchSize <= 0 {
		cfg.batchSize = cfg.concurrency
	}
	cfg.batchSize = min(cfg.batchSize, BatchSizeMax)
	if cfg.claimGather == 0 {
		cfg.claimGather = ClaimGather
	}
	if len(cfg.queues) == 0 {
		cfg.queues = []string{queuetytype.DefaultQueue}
	}
	if cfg.registry == nil {
		cfg.registry = c.Registry() // queuety.WithRegistry's, or nil
	}
	if cfg.registry == nil {
		cfg.registry = queuety.NewRegistry()
	}
	e := clientseam.Engine(c) // the worker's one reach into the client
	if cfg.logger == nil {
		cfg.logger = e.Logger()
	}
	cfg.intervals = cfg.intervals.withDefaults()
	cfg.retention = cfg.retention.withDefaults()
	if cfg.leaseInterval > 0 && 2*cfg.leaseInterval > e.LeaseTimeout() {
		cfg.logger.Warn("queuety: the lease interval is more than half the client's lease timeout; live claims may be recovered as dead",
			"lease_interval", cfg.leaseInterval, "lease_timeout", e.LeaseTimeout())
	}
	reg := cfg.registry
	handlers := &engine.WorkerHandlers{
		Callback:      func(name string) bool { _, ok := reg.Callback(name); return ok },
		BatchCallback: reg.IsBatchCallback,
		Queue:         cfg.queues[0],
	}
	e.RegisterWorker(handlers) // held weakly: the worker keeps it alive
	timers, engineTimers := timersOf(e.Clock())
	w := &Worker{
		c: c, engine: e, sweeper: deadline.New(c), cfg: cfg, reg: cfg.registry, log: cfg.logger, obs: e.Observer(),
		timers: timers, engineTimers: engineTimers, hooks: newWebhooks(e, cfg), funcs: clientseam.Functions(cfg.registry),
		inflight: map[int64]*attempt{}, replaced: map[*attempt]struct{}{}, abandoned: map[*attempt]struct{}{}, recording: map[*engine.Claimed]struct{}{}, freed: make(chan struct{}, 1), registration: handlers,
		serial: newSerialWrites(c.StoreInfo().SerialWriters),
	}
	w.host = hostname()
	w.registryID = newRegistryID(w.host)
	w.limit.Store(int64(cfg.concurrency))
	return w.withAdmission()
}

// HandleJob registers a plain-job handler (see queuety.Registry.HandleJob).
func (w *Worker) HandleJob(name string, fn queuety.JobFunc) { w.reg.HandleJob(name, fn) }

// HandleStep registers a workflow step handler.
func (w *Worker) HandleStep(name string, fn queuety.StepFunc) { w.reg.HandleStep(name, fn) }

// HandleDeadline registers a deadline or cancel callback.
func (w *Worker) HandleDeadline(name string, fn queuety.CallbackFunc) { w.reg.HandleDeadline(name, fn) }

// HandleCompensation registers a compensation handler (see
// queuety.Registry.HandleCompensation).
func (w *Worker) HandleCompensation(name string, fn queuety.CallbackFunc) {
	w.reg.HandleCompensation(name, fn)
}

// HandleForEach registers the branch handler of a for_each step: it runs
// once per item, as its own job.
func (w *Worker) HandleForEach(name string, fn queuety.ForEachFunc) { w.reg.HandleForEach(name, fn) }

// HandleForEachItem registers the branch handler of a for_each step that
// needs only its item (see queuety.Registry.HandleForEachItem).
func (w *Worker) HandleForEachItem(name string, fn queuety.ForEachItemFunc) {
	w.reg.HandleForEachItem(name, fn)
}

// HandleReducer registers a for_each reducer: it turns a settled step's
// aggregate into the keys merged into the state.
func (w *Worker) HandleReducer(name string, fn queuety.ReducerFunc) { w.reg.HandleReducer(name, fn) }

// HandleRepeatCondition registers a repeat condition, named by
// RepeatWhile or RepeatUntil.
func (w *Worker) HandleRepeatCondition(name string, fn queuety.RepeatConditionFunc) {
	w.reg.HandleRepeatCondition(name, fn)
}

// Registry returns the worker's handler registry.
func (w *Worker) Registry() *queuety.Registry { return w.reg }

// Stats returns the counters so far.
func (w *Worker) Stats() Stats {
	return Stats{
		Claimed: w.stats.claimed.Load(), Succeeded: w.stats.succeeded.Load(), Failed: w.stats.failed.Load(),
		Stale: w.stats.stale.Load(), HandedBack: w.stats.handedBack.Load(), Eager: w.stats.eager.Load(),
		Abandoned: w.stats.abandoned.Load(),
	}
}

// handlers lists the handler names this worker claims.
func (w *Worker) handlers() []string {
	return append(w.reg.Names(), engine.InternalHandlers()...)
}

// takes reports whether this worker claims jobs of handler on queue.
func (w *Worker) takes(queue, handler string) bool {
	return slices.Contains(w.cfg.queues, queue) && (engine.IsInternalHandler(handler) || slices.Contains(w.reg.Names(), handler))
}

// ErrAlreadyRunning is returned when Run or RunOnce is called on a worker
// that is already running.
var ErrAlreadyRunning = errors.New("worker: already running")

// Run claims and runs jobs until ctx is cancelled, with the periodic sweeps
// running on their schedule. On cancellation it stops claiming, lets
// running handlers finish for up to the shutdown timeout, then cancels
// their contexts with queuety.ErrWorkerShutdown; jobs interrupted that way
// are handed back to the queue without using an attempt. Handlers that
// ignore the cancellation get the hard-stop timeout more; then Run returns
// a *ShutdownError naming their jobs, which stay claimed and are
// recovered by lease expiry. Until a handler returns or Run gives up on
// it at the hard stop, its claim is renewed, so no other worker runs its
// job meanwhile. The whole shutdown is therefore bounded by
// ShutdownTimeout + HardStopTimeout (plus a running sweep's end). Handlers
// abandoned earlier (see AbandonGrace) are not waited for: their attempts
// are recorded already. It returns nil after a clean shutdown. Database
// errors are logged and retried with backoff; they never stop the worker.
// With StopWhenUnhealthy, Run also stops when the worker becomes unhealthy
// and returns an error wrapping ErrUnhealthy.
//
// To stop on SIGINT/SIGTERM, pass a context from signal.NotifyContext.
// An invalid WebhookOptions.Allow entry makes Run return its error at
// once.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.hooks.err; err != nil {
		return err
	}
	if !w.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer w.running.Store(false)
	hardCtx, hardCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardCancel(nil)
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	w.setStopRun(stopRun)
	defer w.setStopRun(nil)

	stopMaintenance := func() {}
	if w.cfg.maintenance {
		var err error
		if stopMaintenance, err = w.startMaintenance(ctx); err != nil {
			return err
		}
	}
	stopAux := w.startAux(hardCtx)
	// Jobs this process commits start without a poll: a commit of a few
	// jobs wakes only as many idle workers as claim them.
	sub := w.engine.SubscribeWakeFor(engine.WakeTarget{Batch: w.gatherWant, Takes: w.takes})
	w.wake = sub
	defer sub.Close()
	w.log.Info("queuety: worker started", "queues", w.cfg.queues, "concurrency", w.cfg.concurrency, "handlers", len(w.reg.Names()))

	w.setStopping(false)
	if w.cfg.scale.max > 0 {
		w.limit.Store(int64(w.cfg.scale.min))
		scaleCtx, stopScale := context.WithCancel(ctx)
		scaled := make(chan struct{})
		go func() { defer close(scaled); w.scaler(scaleCtx) }()
		defer func() { stopScale(); <-scaled; w.limit.Store(int64(w.cfg.concurrency)) }()
	}
	w.fetchLoop(ctx, hardCtx, nil)
	w.setStopping(true)

	w.log.Info("queuety: worker stopping", "running", w.busyCount(), "grace", w.cfg.shutdownTimeout)
	stopMaintenance()
	err := w.drain(hardCancel)
	stopAux()
	w.logAbandonedAtStop()
	w.log.Info("queuety: worker stopped", "succeeded", w.stats.succeeded.Load(), "failed", w.stats.failed.Load())
	return errors.Join(unhealthyCause(ctx), err)
}

// RunOnce runs every sweep and the schedule tick once, then claims and
// runs due jobs until none is due for this worker or budget has passed,
// waits for the running handlers (up to the shutdown timeout, then the
// hard-stop timeout, as in Run) and returns. Jobs it claimed but did not
// start are handed back. Beside the drain it runs the retention cleaner's
// pass when one is due: at most one an Interval across the fleet, however
// often cron starts workers, within budget (see Retention). It is what
// `queuety-worker work --once` runs from cron. The error reports sweep failures and, as a *ShutdownError,
// handlers left running at the end; job failures are recorded on the
// jobs, not returned. With StopWhenUnhealthy it also stops claiming when
// the worker becomes unhealthy, and its error wraps ErrUnhealthy.
// An invalid WebhookOptions.Allow entry makes it return its error before
// it runs anything.
func (w *Worker) RunOnce(ctx context.Context, budget time.Duration) (Stats, error) {
	if err := w.hooks.err; err != nil {
		return Stats{}, err
	}
	if !w.running.CompareAndSwap(false, true) {
		return Stats{}, ErrAlreadyRunning
	}
	defer w.running.Store(false)
	before := w.Stats()
	report, sweepErr := w.sweeper.RunAll(ctx)
	fired, tickErr := w.sweeper.Schedules(ctx)
	_, machineErr := w.machineTimeouts(ctx) // machines.go
	sweepErr = errors.Join(sweepErr, tickErr, machineErr)

	hardCtx, hardCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardCancel(nil)
	stopAux := w.startAux(hardCtx)
	waitRetention := w.retainOnce(ctx, budget) // retention.go
	drainCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	drainCtx, stopRun := context.WithCancelCause(drainCtx)
	defer stopRun(nil)
	w.setStopRun(stopRun)
	defer w.setStopRun(nil)
	w.setStopping(false)
	w.fetchLoop(drainCtx, hardCtx, func() bool { return w.idle(drainCtx) })
	w.setStopping(true)
	sweepErr = errors.Join(sweepErr, unhealthyCause(drainCtx), w.drain(hardCancel))
	waitRetention()
	stopAux()
	w.logAbandonedAtStop()

	after := w.Stats()
	return Stats{
		Claimed: after.Claimed - before.Claimed, Succeeded: after.Succeeded - before.Succeeded,
		Failed: after.Failed - before.Failed, Stale: after.Stale - before.Stale,
		HandedBack: after.HandedBack - before.HandedBack, Eager: after.Eager - before.Eager,
		Abandoned: after.Abandoned - before.Abandoned, Swept: report, SchedulesFired: fired,
	}, sweepErr
}

// start runs one claimed job at once, on a runner goroutine (see
// runners), under a context descended from parent.
func (w *Worker) start(parent context.Context, cj *engine.Claimed) { w.launch(parent, cj, false) }

// launch is start; held says the job's slot was already reserved (counted
// busy and in wg, see reserveSlots).
func (w *Worker) launch(parent context.Context, cj *engine.Claimed, held bool) {
	w.launchWith(parent, cj, held, nil)
}

// launchWith is launch for a job of held claim hb (nil: a claimed job);
// it returns the attempt.
func (w *Worker) launchWith(parent context.Context, cj *engine.Claimed, held bool, hb *heldBatch) *attempt {
	ctx, cancel := context.WithCancelCause(parent)
	a := &attempt{cj: cj, cancel: cancel, hold: hb}
	w.mu.Lock()
	if !held {
		w.busy++
	}
	prev := w.inflight[cj.Job.ID]
	w.inflight[cj.Job.ID] = a
	if prev != nil {
		w.replaced[prev] = struct{}{}
	}
	w.mu.Unlock()
	if prev != nil {
		// The job was claimed again, so the earlier attempt has lost it.
		prev.cancel(fmt.Errorf("%w: job %d was claimed again", queuetytype.ErrLeaseLost, cj.Job.ID))
	}
	if !held {
		w.wg.Add(1)
	}
	w.runners.start(func() {
		defer w.finishSlot(a)
		w.execute(ctx, a)
	})
	return a
}

// finishSlot frees the slot of a, whose handler returned (or was never
// called), and ends its count in wg; the abandonment did both for an
// abandoned handler (see abandonedReturned).
func (w *Worker) finishSlot(a *attempt) {
	a.cancel(nil)
	if a.state.Load() == attemptAbandoned {
		w.abandonedReturned(a)
		return
	}
	defer w.wg.Done()
	w.mu.Lock()
	w.busy--
	w.forgetLocked(a)
	if w.busy == 0 {
		w.serial.allFinished()
	}
	taken := w.takenLocked()
	w.mu.Unlock()
	w.slotFreed(taken)
}

// slotFreed notes that a handler finished, leaving busy slots taken. It
// wakes the fetch loop only when that can change what the loop does: the
// first slot freed, a whole batch free, or nothing left running. The
// claim gathering reads the time of the last finish instead of being
// woken by each one, so a batch of quick handlers costs the loop one
// wake-up rather than one per handler.
func (w *Worker) slotFreed(busy int) {
	w.lastFinish.Store(time.Now().UnixNano())
	free := w.Concurrency() - busy
	if free == 1 || free >= w.gatherWant() || busy == 0 {
		select {
		case w.freed <- struct{}{}:
		default:
		}
	}
}

// gatherWant is the number of free slots the claim gathering waits for.
func (w *Worker) gatherWant() int { return min(w.cfg.batchSize, w.Concurrency()) }

// execute runs the handler of a, whose context is ctx, and records the
// outcome.
func (w *Worker) execute(ctx context.Context, a *attempt) {
	cj, clock := a.cj, w.engine.Clock()
	var job observe.Job
	if w.obs != nil {
		job = cj.ObservedJob()
		ctx = w.obs.JobStart(ctx, job)
	}
	if missing := cj.MissingFunction(w.funcs); missing != "" {
		w.deferJob(cj, missing)
		w.observeHandBack(ctx, job, nil)
		return
	}
	hctx, flush := w.engine.Attach(ctx, cj, a.cancel)
	info, _ := queuety.JobInfoFrom(hctx) // Attach put cj.Info() there
	hctx, stop := withDeadlines(hctx, info, clock)
	if w.obs != nil {
		hctx = w.obs.HandlerStart(hctx, job)
	}
	startedAt, t0 := clock.Now(), time.Now()
	w.watch(a, ctx, hctx, job, startedAt, t0)
	out, err := w.call(hctx, cj)
	dur := time.Since(t0)
	if !a.state.CompareAndSwap(attemptRunning, attemptReturned) {
		// Abandoned meanwhile: its attempt is recorded already, and this
		// late result goes to the engine only to be refused.
		stop()
		flush()
		w.lateResult(a, &engine.Result{Claimed: cj, Err: err, Output: out, StartedAt: startedAt, Duration: dur, Funcs: w.funcs})
		return
	}
	if w.obs != nil {
		w.obs.HandlerEnd(hctx, job, observe.Handled{Duration: dur, Err: err})
	}
	stop()
	flush()
	if w.released(cj, err) {
		return
	}
	if err != nil {
		if cause := context.Cause(hctx); cause != nil && !errors.Is(err, cause) {
			var te *queuetytype.TimeoutError
			if errors.As(cause, &te) || errors.Is(cause, queuetytype.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w (handler returned: %v)", cause, err)
			}
		}
		if errors.Is(context.Cause(ctx), queuetytype.ErrWorkerShutdown) {
			// Interrupted by shutdown: hand back without using the attempt.
			if a.hold != nil && a.hold.handBack(cj) {
				w.observeHandBack(ctx, job, err) // still held: left pending
				return
			}
			w.handBack([]*engine.Claimed{cj})
			w.observeHandBack(ctx, job, err)
			return
		}
	}
	r := &engine.Result{Claimed: cj, Err: err, Output: out, StartedAt: startedAt, Duration: dur, Funcs: w.funcs}
	if w.obs != nil {
		r.Observed, r.Returned = ctx, t0.Add(dur)
	}
	if a.hold != nil && a.hold.report(r) {
		return // the held claim records it (hold.go)
	}
	if err == nil && cj.Err() == nil && w.batchSuccess(r) {
		return
	}
	w.finish(r)
}

// withDeadlines puts the attempt's start-to-close deadline and its
// workflow's deadline on ctx, each with a cause that says which one passed.
func withDeadlines(ctx context.Context, info queuetytype.JobInfo, clock queuety.Clock) (context.Context, func()) {
	if info.Deadline.IsZero() && info.WorkflowDeadline.IsZero() {
		return ctx, func() {}
	}
	var cancels []context.CancelFunc
	now := clock.Now()
	if !info.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, time.Now().Add(info.Deadline.Sub(now)), &queuetytype.TimeoutError{
			Kind: queuetytype.TimeoutStartToClose, Deadline: info.Deadline,
			Message: fmt.Sprintf("Activity %s start-to-close deadline expired at %s.", info.Handler, info.Deadline.UTC().Format(time.RFC3339Nano)),
		})
		cancels = append(cancels, cancel)
	}
	if !info.WorkflowDeadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, time.Now().Add(info.WorkflowDeadline.Sub(now)), queuetytype.ErrDeadlineExceeded)
		cancels = append(cancels, cancel)
	}
	return ctx, func() {
		for _, c := range cancels {
			c()
		}
	}
}
