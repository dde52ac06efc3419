package bench

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// besideDefault is the backlog of drain-<N>w-beside: pending jobs of a
// handler no worker of the run registers.
const besideDefault = 50000

// besideHandler is the handler of the backlog a beside drain reads past.
const besideHandler = "beside"

// parseBeside reads an opt-in beside scenario name: drain-<N>w-beside
// (a backlog of 50,000) or drain-<N>w-beside-<K>k (K thousand).
func parseBeside(name string) (workers, backlog int, ok bool) {
	rest, found := strings.CutPrefix(name, "drain-")
	if !found {
		return 0, 0, false
	}
	w, rest, found := strings.Cut(rest, "w-beside")
	if !found {
		return 0, 0, false
	}
	workers, err := strconv.Atoi(w)
	if err != nil || workers < 1 || strconv.Itoa(workers) != w {
		return 0, 0, false
	}
	if rest == "" {
		return workers, besideDefault, true
	}
	k, found := strings.CutPrefix(rest, "-")
	if !found {
		return 0, 0, false
	}
	k, found = strings.CutSuffix(k, "k")
	n, err := strconv.Atoi(k)
	if !found || err != nil || n < 1 || strconv.Itoa(n) != k {
		return 0, 0, false
	}
	return workers, n * 1000, true
}

// besideScenarios are the opt-in drains named in cfg.Scenarios as
// drain-<N>w-beside[-<K>k]: drain-<N>w with K pending jobs of another
// handler ahead of the no-op jobs in claim order on the same queue, as
// when services that register different handlers share a queue. They
// run only when named.
func besideScenarios(cfg Config) []limitScenario {
	var out []limitScenario
	seen := map[string]bool{}
	for _, name := range cfg.Scenarios {
		workers, backlog, ok := parseBeside(name)
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, limitScenario{name, func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
			return drainBeside(ctx, c, dsn, cfg.Jobs, backlog, workers, cfg.Concurrency)
		}})
	}
	return out
}

// drainBeside dispatches backlog pending jobs of a handler the workers do
// not register and then n no-op jobs on the same queue (untimed, the
// backlog first, so it is ahead in claim order), then times workers
// draining the no-op jobs. It checks afterwards that the no-op jobs all
// completed and the backlog is still pending.
func drainBeside(ctx context.Context, setup *queuety.Client, dsn string, n, backlog, workers, concurrency int) (float64, error) {
	reqs := make([]queuety.JobRequest, backlog)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: besideHandler, Payload: queuety.State{"i": i}}
	}
	if err := dispatchAll(ctx, setup, reqs); err != nil {
		return 0, err
	}
	if err := dispatchAll(ctx, setup, noopRequests(n)); err != nil {
		return 0, err
	}
	return runWorkers(ctx, dsn, workers, concurrency, noopHandler, n, besideDrained(setup, n, backlog), float64(n))
}

// besideDrained checks, after a beside drain, that the store holds n
// completed jobs and backlog pending ones and nothing else. No worker
// runs the other handler, so the completed jobs are the no-op jobs, all
// of them.
func besideDrained(setup *queuety.Client, n, backlog int) func(context.Context) error {
	return func(ctx context.Context) error {
		counts, err := setup.Counts(ctx)
		if err != nil {
			return err
		}
		got := map[queuetytype.JobStatus]int64{}
		for _, c := range counts {
			got[c.Status] += c.Count
		}
		want := map[queuetytype.JobStatus]int64{queuetytype.JobCompleted: int64(n), queuetytype.JobPending: int64(backlog)}
		if !maps.Equal(got, want) {
			return fmt.Errorf("after the drain the store holds %v jobs by status, want %d completed and %d pending", got, n, backlog)
		}
		return nil
	}
}
