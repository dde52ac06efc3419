package deadline

import (
	"context"
	"log/slog"

	"github.com/queuety/queuety-go/internal/sweep"
)

// OverrunWindow is how many running workflows one window of the overrun
// sweep reads, and OverrunWindows how many windows one run reads at most:
// the sweep examines at most OverrunWindow × OverrunWindows running
// workflows per run, continuing where its last run stopped.
const (
	OverrunWindow  = 500
	OverrunWindows = 10
)

// Overruns fails running workflows whose row says they are past their
// last step (current_step greater than total_steps): no step job exists
// for them and none would ever be enqueued, so they would stay running
// forever. Each is failed with a message that names the step it is at and
// the number of steps, and a workflow_failed log row (see
// engine.FailOverrunWorkflows). No index can find such rows, so the sweep
// walks the running workflows through the status index, at most
// OverrunWindows windows of OverrunWindow workflows per run, and stops
// early after it has wrapped around to the first. It returns how many
// workflows it failed.
func (s *Sweeper) Overruns(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepOverruns, func() (int, error) {
		total, short := 0, 0
		for range OverrunWindows {
			n, full, err := sweep.FailOverrunWorkflows(ctx, s.engine, OverrunWindow)
			total += n
			if err != nil || ctx.Err() != nil {
				return total, err
			}
			if !full {
				if short++; short == 2 {
					break
				}
			}
		}
		if total > 0 {
			s.log.Log(ctx, slog.LevelWarn, "queuety: workflows failed: past their last step", "count", total)
		}
		return total, nil
	})
}
