package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// maintenance is the gocron scheduler that runs the sweeps of a
// long-running worker. Each task runs at start and then every interval
// (± jitter); a task never overlaps itself (a run that is still going when
// the next is due makes that next run wait for the following slot).
type maintenance struct {
	s gocron.Scheduler
}

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

func (w *Worker) startMaintenance(ctx context.Context) (*maintenance, error) {
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
	s.Start()
	return &maintenance{s: s}, nil
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

func (m *maintenance) stop() { _ = m.s.Shutdown() }
