package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/go-co-op/gocron/v2"
)

// task is one periodic maintenance job.
type task struct {
	name     string
	interval time.Duration
	run      func(context.Context) (int, error)
}

func (w *Worker) tasks() []task {
	iv := w.cfg.intervals
	return []task{
		{"stale-recovery", iv.Stale, w.sweeper.Stale},
		{"activity-timeouts", iv.Watchdog, w.sweeper.Timeouts},
		{"wait-timers", iv.WaitTimer, w.sweeper.WaitTimers},
		{"workflow-deadlines", iv.Deadlines, w.sweeper.Deadlines},
	}
}

// startMaintenance starts the gocron scheduler that runs the sweeps of a
// long-running worker. Each task runs at start and then every interval
// (± jitter); a task never overlaps itself (a run that is still going when
// the next is due makes that next run wait for the following slot).
func (w *Worker) startMaintenance(ctx context.Context) (gocron.Scheduler, error) {
	s, err := gocron.NewScheduler(gocron.WithStopTimeout(w.cfg.shutdownTimeout))
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
			gocron.WithSingletonMode(gocron.LimitModeReschedule),
			gocron.WithStartAt(gocron.WithStartImmediately()))
		if err != nil {
			_ = s.Shutdown()
			return nil, fmt.Errorf("worker: schedule %s: %w", t.name, err)
		}
	}
	if w.cfg.intervals.ScheduleIdle >= 0 {
		if err := w.scheduleTick(ctx, s, time.Time{}); err != nil {
			_ = s.Shutdown()
			return nil, err
		}
	}
	s.Start()
	return s, nil
}

// scheduleTick registers a one-time gocron job for the next schedule tick
// at wake (now when zero). Each run ticks every due schedule, then
// registers the next run for the earliest due time, capped by
// ScheduleIdle, so the tick sleeps until there is something to fire.
func (w *Worker) scheduleTick(ctx context.Context, s gocron.Scheduler, wake time.Time) error {
	start := gocron.OneTimeJobStartImmediately()
	if !wake.IsZero() && wake.After(time.Now()) {
		start = gocron.OneTimeJobStartDateTime(wake)
	}
	_, err := s.NewJob(gocron.OneTimeJob(start), gocron.NewTask(func(ctx context.Context) {
		w.runTask(ctx, task{name: "schedule-tick", run: w.sweeper.Schedules})
		if ctx.Err() != nil {
			return
		}
		if err := w.scheduleTick(ctx, s, w.nextTick(ctx)); err != nil && ctx.Err() == nil {
			w.log.Error("queuety: reschedule the schedule tick", "err", err)
		}
	}), gocron.WithName("schedule-tick"), gocron.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("worker: schedule the schedule tick: %w", err)
	}
	return nil
}

// nextTick is the wall-clock time of the next schedule tick.
func (w *Worker) nextTick(ctx context.Context) time.Time {
	idle := w.cfg.intervals.ScheduleIdle
	wait := idle
	due, ok, err := w.engine.NextScheduleDue(ctx)
	if err != nil {
		w.log.Warn("queuety: read next schedule due time", "err", err)
	} else if ok {
		wait = min(max(due.Sub(engine.OfClient(w.c).Clock().Now()), 0), idle)
	}
	return time.Now().Add(jitter(wait, w.cfg.intervals.Jitter/10))
}

// runTask runs one sweep (gocron passes the job's context first).
func (w *Worker) runTask(ctx context.Context, t task) {
	n, err := t.run(ctx)
	if err != nil && ctx.Err() == nil {
		w.log.Error("queuety: maintenance task failed", "task", t.name, "err", err)
	}
	if h := w.cfg.hooks.Swept; h != nil {
		h(t.name, n, err)
	}
}
