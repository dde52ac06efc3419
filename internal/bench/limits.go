package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// limitScenario is a drain whose jobs or workers carry admission limits
// that never bind, so the figure is the cost of checking them.
type limitScenario struct {
	name string
	run  func(ctx context.Context, c *queuety.Client, dsn string) (float64, error)
}

// limitScenarios are the drains beside drain-<N>w that measure admission:
//
//   - drain-grouped-<N>w: every job is in one concurrency group with a
//     limit of 60,000 on the row (a claim counts the group's processing
//     jobs under the group's lock row);
//   - drain-ratelimited-<N>w: the workers limit the handler to 10,000,000
//     starts per second (a claim locks the handler's row, counts the
//     window and records every start);
//   - drain-costbudget-1w: a worker cost budget of 1,000,000 units (an
//     in-process check and a cost filter in the claim);
//   - drain-<N>w-held: drain-<N>w with the workers holding their claims
//     (worker.HoldClaims), where the store can.
func limitScenarios(cfg Config) []limitScenario {
	var out []limitScenario
	for _, w := range cfg.Workers {
		out = append(out,
			limitScenario{fmt.Sprintf("drain-grouped-%dw", w), func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return drainLimited(ctx, c, dsn, cfg.Jobs, w, cfg.Concurrency,
					[]queuety.JobOption{queuety.ConcurrencyGroup("bench"), queuety.ConcurrencyLimit(60000)})
			}},
			limitScenario{fmt.Sprintf("drain-ratelimited-%dw", w), func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return drainLimited(ctx, c, dsn, cfg.Jobs, w, cfg.Concurrency, nil, worker.RateLimit("noop", 10_000_000, time.Second))
			}},
			limitScenario{fmt.Sprintf("drain-%dw-held", w), func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return drainLimited(ctx, c, dsn, cfg.Jobs, w, cfg.Concurrency, nil, worker.HoldClaims(0))
			}},
		)
	}
	out = append(out, limitScenario{"drain-costbudget-1w", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
		return drainLimited(ctx, c, dsn, cfg.Jobs, 1, cfg.Concurrency, []queuety.JobOption{queuety.CostUnits(2)}, worker.CostBudget(1_000_000))
	}})
	return out
}

// drainLimited dispatches n no-op jobs with the job options (untimed),
// then times workers with the worker options draining them.
func drainLimited(ctx context.Context, setup *queuety.Client, dsn string, n, workers, concurrency int, jobOpts []queuety.JobOption, opts ...worker.Option) (float64, error) {
	reqs := noopRequests(n)
	for i := range reqs {
		reqs[i].Options = jobOpts
	}
	if err := dispatchAll(ctx, setup, reqs); err != nil {
		return 0, err
	}
	return runWorkers(ctx, dsn, workers, concurrency, noopHandler, n, allCompleted(setup, n), float64(n), opts...)
}
