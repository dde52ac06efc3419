package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/queuety/queuety-go/deadline"
)

// task is one periodic maintenance job.
type task struct {
	name     string
	interval time.Duration
	run      func(context.Context) (int, error)
	running  atomic.Bool
}

func (w *Worker) tasks() []*task {
	iv := w.cfg.intervals
	ts := []*task{
		{name: deadline.SweepStale, interval: iv.Stale, run: w.gated(deadline.SweepStale, gateStale, w.recoverStale)}, // holdback.go, sweepgate.go
		{name: deadline.SweepTimeouts, interval: iv.Watchdog, run: w.gated(deadline.SweepTimeouts, gateActivity, w.sweeper.Timeouts)},
		{name: deadline.SweepWaits, interval: iv.WaitTimer, run: w.gated(deadline.SweepWaits, gateWait, w.sweeper.WaitTimers)},
		{name: deadline.SweepWorkflowWaits, interval: iv.WaitTimer, run: w.gated(deadline.SweepWorkflowWaits, gateWorkflowWait, w.sweeper.WorkflowWaits)}, // deadline/waits.go
		{name: deadline.SweepDeadlines, interval: iv.Deadlines, run: w.gated(deadline.SweepDeadlines, gateDeadline, w.sweeper.Deadlines)},
		{name: "batch-callbacks", interval: iv.Deadlines, run: w.gated("", gateBatch, w.sweeper.BatchCallbacks)},                                              // deadline/batches.go
		{name: deadline.SweepWorkflowCallbacks, interval: iv.Deadlines, run: w.gated(deadline.SweepWorkflowCallbacks, gateEnds, w.sweeper.WorkflowCallbacks)}, // deadline/compensations.go
		{name: deadline.SweepOverruns, interval: iv.Deadlines, run: w.gated(deadline.SweepOverruns, gateOverrun, w.sweeper.Overruns)},                         // deadline/overrun.go
		{name: SweepMachineTimeouts, interval: iv.WaitTimer, run: w.gated(SweepMachineTimeouts, gateMachine, w.machineTimeouts)},                              // machines.go
	}
	if t := w.retentionTask(); t != nil { // retention.go
		ts = append(ts, t)
	}
	return ts
}

// startMaintenance starts the sweeps of a long-running worker on a gocron
// scheduler and the schedule tick in its own goroutine, both on the
// worker's timer clock (see TimerClock). Each sweep runs at start and then
// every interval (± jitter); a sweep never overlaps itself (a run that is
// still going when the next is due makes that next run wait for the
// following slot). The returned function stops them and waits for running
// sweeps (up to the shutdown timeout) and the tick.
//
// runTask keeps a sweep from overlapping itself rather than gocron's
// singleton mode: that mode skips a run that is due before gocron has
// finished its bookkeeping of the previous one, after the task returned,
// so a fake clock moved on as soon as a sweep reported could skip the next
// run. A plain gocron job has its next run scheduled before it runs.
func (w *Worker) startMaintenance(ctx context.Context) (func(), error) {
	s, err := gocron.NewScheduler(gocron.WithStopTimeout(w.cfg.shutdownTimeout), gocron.WithClock(w.timers))
	if err != nil {
		return nil, fmt.Errorf("worker: start maintenance scheduler: %w", err)
	}
	for _, t := range w.tasks() {
		if t.interval < 0 {
			continue
		}
		spread := time.Duration(float64(t.interval) * w.cfg.intervals.Jitter)
		def := gocron.DurationJob(t.interval)
		if spread > 0 {
			def = gocron.DurationRandomJob(t.interval-spread, t.interval+spread)
		}
		_, err := s.NewJob(def, gocron.NewTask(w.runTask, t),
			gocron.WithName(t.name),
			gocron.WithContext(ctx),
			gocron.WithStartAt(gocron.WithStartImmediately()))
		if err != nil {
			_ = s.Shutdown()
			return nil, fmt.Errorf("worker: schedule %s: %w", t.name, err)
		}
	}
	s.Start()
	if h := w.cfg.test.started; h != nil {
		h(s)
	}
	tickDone := make(chan struct{})
	if w.cfg.intervals.ScheduleIdle >= 0 {
		go func() {
			defer close(tickDone)
			w.scheduleLoop(ctx)
		}()
	} else {
		close(tickDone)
	}
	return func() {
		_ = s.Shutdown()
		<-tickDone
	}, nil
}

// scheduleLoop runs the schedule tick at start and then whenever the next
// schedule is due, so the tick sleeps until there is something to fire.
// While nothing is due it reads the next due time again every
// ScheduleIdle (one statement, no transaction) to notice schedules other
// processes saved, and runs the tick only when that read finds one due; a
// schedule saved or switched on through a client of this process wakes it
// at once. While a firing is buffered behind its schedule's previous run,
// which no stored time predicts the end of, it ticks every
// scheduleBufferedPoll. After a database error (the tick's, or reading
// the next due time) it runs again after scheduleRetryMin, doubling up to
// scheduleRetryMax while the errors last, on real time or the engine
// clock, whichever passes first, so the schedules resume within seconds of
// the database coming back. It returns when ctx is done.
//
// The tick is not a gocron one-time job: gocron loops forever when a
// one-time job's start time passes between NewJob and the scheduler
// registering it, which a near due time or a moving fake clock can cause.
func (w *Worker) scheduleLoop(ctx context.Context) {
	tick := &task{name: deadline.SweepSchedules, run: w.sweeper.Schedules}
	saved, unsubscribe := w.engine.SubscribeScheduleWake()
	defer unsubscribe()
	retry := time.Duration(0)
	run := true // tick now; otherwise only read the next due time
	for {
		var err error
		if run {
			err = w.sweepOnce(ctx, tick)
		}
		if ctx.Err() != nil {
			return
		}
		var next tickPlan
		if err == nil {
			next, err = w.nextTick(ctx)
		}
		if err == nil && next.due && !run {
			run = true // found due on a read: tick at once
			continue
		}
		var timer, orTimer <-chan time.Time // orTimer: nil (never ready) but after an error
		var stop func()
		wait := next.wait
		run = next.tickAfter
		if err != nil {
			retry = min(max(2*retry, scheduleRetryMin), scheduleRetryMax)
			wait, run = retry, true
			e := w.newEither(wait)
			timer, orTimer, stop = e.real.C, e.engC(), e.stop
		} else {
			retry = 0
			t := w.timers.NewTimer(wait)
			timer, stop = t.Chan(), func() { t.Stop() }
		}
		if h := w.cfg.test.tickArmed; h != nil {
			h(wait)
		}
		select {
		case <-timer:
		case <-orTimer:
		case <-saved:
			run = true
		case <-ctx.Done():
			stop()
			return
		}
		stop()
	}
}

// The wait before the schedule tick runs again after a database error: it
// starts at scheduleRetryMin and doubles up to scheduleRetryMax while the
// errors last.
const (
	scheduleRetryMin = time.Second
	scheduleRetryMax = 5 * time.Second
)

// scheduleBufferedPoll is how often the schedule tick runs while a firing
// is buffered behind its schedule's previous run.
const scheduleBufferedPoll = 2 * time.Second

// tickPlan is what the schedule tick does next: sleep wait, then tick
// (tickAfter) or only read the next due time again; due says a schedule
// is due now.
type tickPlan struct {
	wait           time.Duration
	due, tickAfter bool
}

// nextTick plans the schedule tick's next sleep, on the worker's timer
// clock: until the next due schedule, at most ScheduleIdle, and at most
// scheduleBufferedPoll while a firing is buffered.
func (w *Worker) nextTick(ctx context.Context) (tickPlan, error) {
	idle := w.cfg.intervals.ScheduleIdle
	p := tickPlan{wait: idle}
	due, ok, buffered, err := w.engine.Schedules().NextDueBuffered(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("queuety: read next schedule due time", "err", err)
		}
		return p, err
	}
	if ok {
		until := max(due.Sub(w.engine.Clock().Now()), 0)
		p.due = until == 0
		if until <= idle {
			p.wait, p.tickAfter = until, true
		}
	}
	if buffered && p.wait > scheduleBufferedPoll {
		p.wait, p.tickAfter = scheduleBufferedPoll, true
	}
	p.wait = jitter(p.wait, w.cfg.intervals.Jitter/10)
	return p, nil
}

// runTask runs one sweep for gocron, which passes the job's context
// first; see sweepOnce.
func (w *Worker) runTask(ctx context.Context, t *task) { _ = w.sweepOnce(ctx, t) }

// sweepOnce runs one sweep and returns its error, unless the previous run
// of the same sweep is still going: then this run is skipped and the
// sweep waits for its next slot.
func (w *Worker) sweepOnce(ctx context.Context, t *task) error {
	if !t.running.CompareAndSwap(false, true) {
		w.log.Debug("queuety: maintenance task still running; skipping this run", "task", t.name)
		return nil
	}
	n, err := t.run(ctx)
	t.running.Store(false)
	if t.name == deadline.SweepStale {
		// Only the stale sweep counts (holdback.go): another sweep that
		// keeps failing on one row must not hold stale recovery back.
		w.writeFailed(ctx, err)
	}
	if err != nil && ctx.Err() == nil {
		w.log.Error("queuety: maintenance task failed", "task", t.name, "err", err)
	}
	if h := w.cfg.hooks.Swept; h != nil {
		h(t.name, n, err)
	}
	return err
}
