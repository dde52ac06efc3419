// Package deadline runs the engine's sweeps: workflow deadlines (execution
// and run timeouts), signal-wait timers, the recovery of workflow waits
// another engine left stranded, the activity-timeout watchdog and
// stale-claim recovery, the schedule tick, and the overrun sweep that
// fails running workflows whose row is past their last step.
//
// Every sweep but the overrun and workflow-waits sweeps finds its
// candidates through an index, so its cost grows with the rows that
// expired, not with the size of the table; the overrun sweep reads a
// bounded window of running workflows per run (see Overruns), and the
// workflow-waits sweep the dependency rows of the current step of each
// workflow waiting for workflows (see WorkflowWaits). Every sweep is
// safe with any number of concurrent sweepers on any number of machines:
// rows are taken with SELECT ... FOR UPDATE SKIP LOCKED (or re-checked
// under their row lock) and changed in one transaction, so each expired
// workflow fails once, its OnDeadline callback is enqueued once, and each
// timed-out job is retried or buried once. No leader is needed.
//
// Workers run the sweeps on a schedule (see package worker); RunAll runs
// them once, which is what cron-driven `queuety-worker work --once` does.
//
// Where the sweeps live: this package holds the loops (a Sweeper repeats
// each sweep's batch until one comes back short, walks the overrun windows,
// logs and reports what changed) and the intervals the worker runs them
// at. The finders, one batch transaction per call that reads the due rows
// through the store's indexes, are in internal/sweep, beside this package
// rather than inside it because Client.RecoverStale and the conformance
// suite run single batches too. The state transitions a batch triggers
// stay with the engine (internal/engine/sweepsteps.go and the files it
// names), where every other transition is: a workflow past its deadline is
// failed by the engine's ExpireLocked, in the same transaction that
// enqueues its OnDeadline callback.
package deadline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
)

// Default intervals of the sweeps in a long-running worker.
const (
	// DeadlineInterval is how often workflows are checked against their
	// execution and run deadlines (Queuety's 60 seconds).
	DeadlineInterval = 60 * time.Second
	// WaitTimerInterval is how often signal waits with a timeout are
	// checked; it bounds how late a wait timeout fires.
	WaitTimerInterval = 5 * time.Second
	// WatchdogInterval is how often activity deadlines (schedule-to-start,
	// start-to-close, schedule-to-close, heartbeat) are enforced for jobs
	// whose worker died or is wedged. Live workers enforce start-to-close
	// themselves through the handler's context.
	WatchdogInterval = 10 * time.Second
	// StaleInterval is how often claims that stopped being renewed are
	// recovered. A Go worker's claim is stale after the client's lease
	// timeout (10 s by default), so a dead worker's jobs are back within
	// about lease timeout + this interval; the query reads only processing
	// jobs, through the (status, reserved_at) index.
	StaleInterval = 2 * time.Second
	// BatchSize is how many rows one sweep transaction handles; a sweep
	// repeats until a batch comes back short.
	BatchSize = 100
)

// Sweeper runs the sweeps for one client.
type Sweeper struct {
	engine *engine.Engine
	log    *slog.Logger
	obs    observe.Observer // the client's; nil: no instrumentation
	batch  int
}

// New returns a Sweeper for c. Each sweep reports to c's observer, if it
// has one (queuety.WithObserver), under the names below.
func New(c *queuety.Client) *Sweeper {
	e := clientseam.Engine(c)
	return &Sweeper{engine: e, log: e.Logger(), obs: e.Observer(), batch: BatchSize}
}

// The sweeps' names, as observers and the worker's logs see them.
const (
	SweepStale     = "stale-recovery"
	SweepTimeouts  = "activity-timeouts"
	SweepWaits     = "wait-timers"
	SweepDeadlines = "workflow-deadlines"
	SweepSchedules = "schedule-tick"
	SweepOverruns  = "workflow-overruns"
)

// observed runs one sweep and reports it to the observer, if any.
func (s *Sweeper) observed(ctx context.Context, name string, run func() (int, error)) (int, error) {
	return s.observedSweep(ctx, name, func(sw *observe.Sweep) { sw.Rows, sw.Err = run() })
}

// observedSweep runs one sweep, which fills in the report's counts and
// error, and reports it to the observer, if any.
func (s *Sweeper) observedSweep(ctx context.Context, name string, run func(*observe.Sweep)) (int, error) {
	sw := observe.Sweep{Name: name}
	if s.obs == nil {
		run(&sw)
		return sw.Rows, sw.Err
	}
	t0 := time.Now()
	run(&sw)
	sw.Duration = time.Since(t0)
	s.obs.Swept(ctx, sw)
	return sw.Rows, sw.Err
}

// Report counts what one RunAll did.
type Report struct {
	WorkflowsExpired int
	WaitsTimedOut    int
	JobsTimedOut     int
	JobsRecovered    int
	BatchCallbacks   int // see BatchCallbacks
	WorkflowOverruns int // see Overruns
	// WorkflowCallbacks counts the workflows another engine ended whose Go
	// compensations or cancel callback were enqueued (see
	// WorkflowCallbacks).
	WorkflowCallbacks int
	// WorkflowWaits counts the stranded workflow waits that settled or
	// failed (see WorkflowWaits).
	WorkflowWaits int
}

// Total is the number of rows changed.
func (r Report) Total() int {
	return r.WorkflowsExpired + r.WaitsTimedOut + r.JobsTimedOut + r.JobsRecovered + r.BatchCallbacks + r.WorkflowOverruns +
		r.WorkflowCallbacks + r.WorkflowWaits
}

// batchOf binds one of package sweep's batch functions to the engine.
func (s *Sweeper) batchOf(step func(context.Context, *engine.Engine, int) (int, bool, error)) func(context.Context, int) (int, bool, error) {
	return func(ctx context.Context, limit int) (int, bool, error) { return step(ctx, s.engine, limit) }
}

// sweep calls step until it finds less than a full batch of candidates,
// then logs msg at level with the number of rows changed, if any.
func (s *Sweeper) sweep(ctx context.Context, step func(context.Context, int) (int, bool, error), level slog.Level, msg string) (int, error) {
	total := 0
	for {
		n, more, err := step(ctx, s.batch)
		total += n
		if err != nil || !more || ctx.Err() != nil {
			if total > 0 {
				s.log.Log(ctx, level, msg, "count", total)
			}
			return total, err
		}
	}
}

// Deadlines fails every non-terminal workflow past its execution deadline
// ("Deadline exceeded") or run deadline ("Run deadline exceeded"): open
// step jobs are buried, waits and timers cancelled, a timeout failure is
// recorded, workflow_failed and workflow_deadline_exceeded are logged, and
// the OnDeadline callback is enqueued, once per workflow.
//
// A running workflow whose deadline handler none of this process's workers
// registered is left, for the client's deadline handoff (5 minutes by
// default), to a worker that has the handler: another Go worker, or
// Queuety PHP's sweep, which calls PHP deadline handlers in-process.
// Deadlines also enqueues the Go deadline handlers of workflows that
// Queuety PHP's sweep failed without calling them (it calls only PHP
// classes), once each. It returns how many workflows it expired plus how
// many such handlers it enqueued.
func (s *Sweeper) Deadlines(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepDeadlines, func() (int, error) { return s.deadlines(ctx) })
}

func (s *Sweeper) deadlines(ctx context.Context) (int, error) {
	var left []int64
	n, err := s.sweep(ctx, func(ctx context.Context, limit int) (int, bool, error) {
		return sweep.ExpireWorkflows(ctx, s.engine, limit, &left)
	}, slog.LevelInfo, "queuety: workflows failed: deadline exceeded")
	if len(left) > 0 {
		s.log.Info("queuety: workflows past their deadline left to a worker that has their deadline handler",
			"count", len(left), "workflow_ids", left, "handoff", s.engine.DeadlineHandoff())
	}
	m, ferr := s.sweep(ctx, s.batchOf(sweep.ForeignExpiries), slog.LevelInfo,
		"queuety: deadline handlers enqueued for workflows another engine expired")
	return n + m, errors.Join(err, ferr)
}

// WaitTimers resumes signal waits whose timeout passed before the signal.
func (s *Sweeper) WaitTimers(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepWaits, func() (int, error) {
		return s.sweep(ctx, s.batchOf(sweep.FireWaitTimeouts), slog.LevelInfo, "queuety: signal waits timed out")
	})
}

// Timeouts enforces expired activity deadlines: retry while attempts
// remain, otherwise bury the job (failing its workflow).
func (s *Sweeper) Timeouts(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepTimeouts, func() (int, error) {
		return s.sweep(ctx, s.batchOf(sweep.EnforceTimeouts), slog.LevelInfo, "queuety: activity timeouts enforced")
	})
}

// Stale recovers jobs whose claim was not renewed within the client's
// stale timeout (the worker died): retry with backoff, or bury when their
// attempts are used up. It also counts an attempt for each job of a held
// claim whose process died (worker.HoldClaims; its journal row expired)
// that is still pending, burying it in the same way when its attempts
// are used up.
func (s *Sweeper) Stale(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepStale, func() (int, error) {
		// The held claims' recovery runs even when the stale one failed,
		// so that a stale job whose recovery keeps failing cannot hold it
		// back; the pass reports both errors.
		n, staleErr := s.sweep(ctx, s.batchOf(sweep.RecoverStale), slog.LevelWarn, "queuety: stale jobs recovered")
		held, heldErr := s.sweep(ctx, s.batchOf(sweep.RecoverHeld), slog.LevelWarn, "queuety: held claims of dead processes recovered (an attempt counted)")
		return n + held, errors.Join(staleErr, heldErr)
	})
}

// Schedules fires every due schedule, dispatching its jobs or workflows,
// and returns how many it dispatched. Due slots that a schedule's
// catch-up policy merges or skips (the tick came after more than one of
// them) are logged as a warning per schedule and reported to the observer
// as observe.Sweep.Missed. It is not part of RunAll: workers tick
// schedules on their own timer, which wakes at the next due time.
func (s *Sweeper) Schedules(ctx context.Context) (int, error) {
	return s.observedSweep(ctx, SweepSchedules, func(sw *observe.Sweep) {
		step := func(ctx context.Context, limit int) (int, bool, error) {
			r, err := sweep.TickSchedules(ctx, s.engine, limit)
			sw.Missed += r.Missed
			return r.Fired, r.More, err
		}
		sw.Rows, sw.Err = s.sweep(ctx, step, slog.LevelInfo, "queuety: schedules fired")
	})
}

// RunAll runs every sweep once, in this order: stale recovery, activity
// timeouts, wait timers, workflow waits, workflow deadlines, batch
// callbacks, workflow callbacks, workflow overruns. An error in one sweep
// does not stop the others; the errors are joined.
func (s *Sweeper) RunAll(ctx context.Context) (Report, error) {
	var r Report
	var errs []error
	for _, run := range []struct {
		count *int
		sweep func(context.Context) (int, error)
	}{
		{&r.JobsRecovered, s.Stale},
		{&r.JobsTimedOut, s.Timeouts},
		{&r.WaitsTimedOut, s.WaitTimers},
		{&r.WorkflowWaits, s.WorkflowWaits},
		{&r.WorkflowsExpired, s.Deadlines},
		{&r.BatchCallbacks, s.BatchCallbacks},
		{&r.WorkflowCallbacks, s.WorkflowCallbacks},
		{&r.WorkflowOverruns, s.Overruns},
	} {
		n, err := run.sweep(ctx)
		*run.count = n
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}
