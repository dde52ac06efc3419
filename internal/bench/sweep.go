package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// sweepHorizon is how far ahead the sweep scenario's deadlines lie; the
// sweeping client's stale and lease timeouts are twice that, so no row
// becomes due while the tables load and the sweeps run.
const sweepHorizon = 24 * time.Hour

// sweepProbe is sweep-<N>: N jobs and N workflows are loaded once (cloned
// from one claimed job and one running workflow, as backlogs are), none
// of them expired: every job is processing with its start-to-close,
// schedule-to-close and heartbeat deadlines a day ahead and a fresh
// claim, every workflow running with its execution and run deadlines a
// day ahead. Then each of the deadline sweep (deadline.Sweeper.Deadlines),
// the activity-timeout watchdog (Timeouts) and stale recovery (Stale) is
// timed p.SweepPasses times, on a client with a worker built (not run),
// so the sweeps do what they do in a worker process. A sweep that changes
// a row fails the scenario. Results: sweep-<N>-deadlines, -timeouts and
// -stale, in ms per pass.
func sweepProbe(p Probes, cfg Config) probe {
	n := p.SweepRows
	name := fmt.Sprintf("sweep-%d", n)
	extra := map[string]float64{"jobs": float64(n), "workflows": float64(n), "expired": 0, "passes": float64(p.SweepPasses)}
	return probe{
		name: name,
		results: []probeResult{
			{name + "-deadlines", "ms", extra}, {name + "-timeouts", "ms", extra}, {name + "-stale", "ms", extra},
		},
		once: true,
		run: func(ctx context.Context, env Env, rep *Report) (*probeOut, error) {
			out := &probeOut{values: map[string][]float64{}, extra: map[string]float64{}}
			_, err := runOnce(ctx, env, func(ctx context.Context, _ *queuety.Client, dsn string) (float64, error) {
				c, err := open(ctx, dsn, queuety.SkipMigrate(), queuety.WithStaleTimeout(2*sweepHorizon), queuety.WithLeaseTimeout(2*sweepHorizon))
				if err != nil {
					return 0, err
				}
				defer c.Close()
				start := time.Now()
				if err := loadUnexpired(ctx, c, n); err != nil {
					return 0, err
				}
				out.extra["load_s"] = time.Since(start).Seconds()
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "%-9s %-28s loaded %d jobs and %d workflows in %.1f s\n", "once", name, n, n, out.extra["load_s"])
				}
				w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()))
				w.HandleJob(sweepJobHandler, func(context.Context, queuety.Payload) error { return nil })
				sw := deadline.New(c)
				sweeps := []struct {
					result string
					run    func(context.Context) (int, error)
				}{{name + "-deadlines", sw.Deadlines}, {name + "-timeouts", sw.Timeouts}, {name + "-stale", sw.Stale}}
				for range p.SweepPasses {
					for _, s := range sweeps {
						t0 := time.Now()
						changed, err := s.run(ctx)
						d := time.Since(t0)
						if err != nil {
							return 0, fmt.Errorf("%s: %w", s.result, err)
						}
						if changed != 0 {
							return 0, fmt.Errorf("%s changed %d rows; none is expired", s.result, changed)
						}
						out.values[s.result] = append(out.values[s.result], ms(d))
					}
				}
				return 0, nil
			}, rep)
			return out, err
		},
	}
}

// Handlers of the sweep scenario's rows; nothing runs them.
const (
	sweepJobHandler  = "bench_sweep"
	sweepStepHandler = "bench_sweep_step"
)

// loadUnexpired adds n processing jobs and n running workflows, none
// expired, to c's store.
func loadUnexpired(ctx context.Context, c *queuety.Client, n int) error {
	if _, err := c.Dispatch(ctx, sweepJobHandler, queuety.State{"i": 0}, queuety.StartToClose(sweepHorizon),
		queuety.HeartbeatTimeout(sweepHorizon), queuety.ScheduleToClose(2*sweepHorizon)); err != nil {
		return err
	}
	claimed, err := clientseam.Engine(c).Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue},
		Handlers: []string{sweepJobHandler}, Limit: 1})
	if err != nil {
		return err
	}
	if len(claimed) != 1 {
		return fmt.Errorf("claimed %d template jobs, want 1", len(claimed))
	}
	wf, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "bench_sweep", ExecutionTimeout: sweepHorizon, RunTimeout: sweepHorizon,
		Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: sweepStepHandler}}}, nil)
	if err != nil {
		return err
	}
	db, err := rawDB(c)
	if err != nil {
		return err
	}
	prefix := clientseam.StoreOf(c).Info().Prefix
	if err := cloneRows(ctx, db, prefix+"queuety_jobs", claimed[0].Job.ID, n-1, nil); err != nil {
		return err
	}
	return cloneRows(ctx, db, prefix+"queuety_workflows", wf, n-1, nil)
}
