// Package bench measures the engine's throughput on a real store: job
// dispatch, draining no-op jobs with one and several workers, 3-step
// workflows, and, on MySQL, the raw batched SKIP LOCKED claim that bounds
// what any queue on the same server can do. Each scenario runs several
// times on fresh tables and reports the median, so a noisy machine moves
// the numbers less; the ratio to the raw-SQL ceiling, measured in the same
// run, is the figure to compare across machines. SQLite has its own
// ceiling, on its one connection.
//
// Other scenarios measure what a rate does not show (probes.go):
// dispatch-to-start latency in one process and across processes, a worker
// process's peak RSS, claims out of backlogs of up to 1,000,000 jobs and
// the sweeps over 1,000,000 jobs and workflows with none expired.
//
// `queuety-worker bench` prints the report; the Go benchmarks in
// store/mysql report the same scenarios through testing.B.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Config says what to run. The store is the Env's.
type Config struct {
	// Jobs is the number of no-op jobs per dispatch/drain run.
	Jobs int
	// Workflows is the number of 3-step workflows per workflow run.
	Workflows int
	// Runs is how many times each scenario runs (the median is reported).
	Runs int
	// Workers lists the worker counts for the drain scenarios.
	Workers []int
	// Concurrency is each worker's handler concurrency.
	Concurrency int
	// FanOuts are the for_each scenarios: workflows × items branches each.
	FanOuts []FanOut
	// Scenarios limits the run to these names (all when empty).
	Scenarios []string
	// Progress, when set, receives a line per finished run.
	Progress io.Writer
	// Probes configures the latency, RSS, backlog and sweep scenarios.
	Probes Probes
	// Peer, when set, runs another queue's drains in the same run (see
	// Peer), a round at a time after the round's own scenarios.
	Peer *Peer
}

// FanOut is one for_each scenario: Workflows workflows, each a for_each
// over Items items.
type FanOut struct{ Workflows, Items int }

// DefaultFanOuts are the fan-out scenarios bench runs: one workflow over
// 10,000 items, and 1,000 workflows over 10 items each.
var DefaultFanOuts = []FanOut{{Workflows: 1, Items: 10000}, {Workflows: 1000, Items: 10}}

// Result is one scenario's measurements.
type Result struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Runs   []float64 `json:"runs"`
	Median float64   `json:"median"`
	// OfCeiling is Median divided by the raw SQL ceiling, for drain rates.
	OfCeiling float64 `json:"of_ceiling,omitempty"`
	// OfCeilingPaired is the median, over the rounds, of each run's rate
	// divided by the ceiling's run of the same round: runs next to each
	// other share the machine's conditions, so this pairs them.
	OfCeilingPaired float64 `json:"of_ceiling_paired,omitempty"`
	// OfLogCeiling and OfLogCeilingPaired are the same against the raw
	// ceiling that also writes Queuety's log rows (raw-sql-ceiling-logs-4c).
	OfLogCeiling       float64 `json:"of_log_ceiling,omitempty"`
	OfLogCeilingPaired float64 `json:"of_log_ceiling_paired,omitempty"`
	// OfMinCeiling and OfMinCeilingPaired are the same against the raw
	// ceiling on a minimal table (raw-sql-min-ceiling-4c, or -1c when
	// only that ran; MySQL only): MinCeiling names it.
	OfMinCeiling       float64 `json:"of_min_ceiling,omitempty"`
	OfMinCeilingPaired float64 `json:"of_min_ceiling_paired,omitempty"`
	MinCeiling         string  `json:"min_ceiling,omitempty"`
	// OfPeer and OfPeerPaired are a drain's rate over its twin's on the
	// peer (drain-4w over river-drain-4w), when a peer ran.
	OfPeer       float64 `json:"of_peer,omitempty"`
	OfPeerPaired float64 `json:"of_peer_paired,omitempty"`
	// CPU per unit (µs) over each run's timed window: this process's (the
	// workers', or the ceiling's client) and the database server's, when
	// it runs on this machine (see cpu.go). Empty where not measured.
	ClientCPU []float64 `json:"client_cpu_us_per_unit,omitempty"`
	ServerCPU []float64 `json:"server_cpu_us_per_unit,omitempty"`
	// Extra holds the settings a result was measured under, such as the
	// worker's poll interval next to a latency.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Report is a whole benchmark run.
type Report struct {
	Store  string `json:"store"`
	Server string `json:"server"`
	// Schema is the store's index set (StoreInfo.Schema), when it has a
	// choice: "queuety" or "lean" on MySQL.
	Schema  string  `json:"schema,omitempty"`
	Jobs    int     `json:"jobs"`
	Runs    int     `json:"runs"`
	Machine Machine `json:"machine"`
	// Peer is the queue that ran beside, when one did; its results are
	// among Results, named after it (river-drain-4w).
	Peer    *PeerInfo `json:"peer,omitempty"`
	Results []*Result `json:"results"`
}

// Env opens fresh stores for each run.
type Env interface {
	// Fresh returns a DSN for a fresh, empty database and a cleanup.
	Fresh(ctx context.Context) (dsn string, cleanup func(), err error)
}

// ceilingEnv is an Env that can also measure the raw SQL ceiling, on
// CeilingConns connections.
type ceilingEnv interface {
	RawCeiling(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error)
	CeilingConns() int
}

// variantCeilingEnv is a ceilingEnv that also measures the raw ceiling
// with Queuety's log rows and with the engine's two-step claim.
type variantCeilingEnv interface {
	ceilingEnv
	RawCeilingLogs(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error)
	RawCeilingTwoStep(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Run runs the scenarios on fresh databases from env.
func Run(ctx context.Context, env Env, cfg Config) (*Report, error) {
	if cfg.Jobs <= 0 {
		cfg.Jobs = 20000
	}
	if cfg.Workflows <= 0 {
		cfg.Workflows = 1000
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 3
	}
	if len(cfg.Workers) == 0 {
		cfg.Workers = []int{1, 4}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	rep := &Report{Jobs: cfg.Jobs, Runs: cfg.Runs, Machine: machineInfo()}
	// A scenario gets a client on a fresh store, and its DSN for the
	// workers' own clients.
	type scenario struct {
		name, unit string
		run        func(ctx context.Context, c *queuety.Client, dsn string) (float64, error)
	}
	var scenarios []scenario
	scenarios = append(scenarios, scenario{"dispatch", "jobs/s", func(ctx context.Context, c *queuety.Client, _ string) (float64, error) {
		return dispatch(ctx, c, cfg.Jobs)
	}})
	for _, w := range cfg.Workers {
		scenarios = append(scenarios, scenario{fmt.Sprintf("drain-%dw", w), "jobs/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
			return drain(ctx, c, dsn, cfg.Jobs, w, cfg.Concurrency)
		}})
	}
	for _, s := range append(limitScenarios(cfg), besideScenarios(cfg)...) {
		scenarios = append(scenarios, scenario{s.name, "jobs/s", s.run})
	}
	scenarios = append(scenarios, scenario{"workflow-3step-4w", "steps/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
		return workflows(ctx, c, dsn, cfg.Workflows, 4, cfg.Concurrency)
	}})
	for _, f := range cfg.FanOuts {
		// Each fan-out twice: a HandleForEach handler (its own copy of the
		// state) and a HandleForEachItem one (no state).
		for _, itemOnly := range []bool{false, true} {
			name := fmt.Sprintf("fanout-%dx%d-4w", f.Workflows, f.Items)
			if itemOnly {
				name += "-item"
			}
			scenarios = append(scenarios, scenario{name, "branches/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return fanOut(ctx, c, dsn, f.Workflows, f.Items, 4, cfg.Concurrency, itemOnly)
			}})
		}
	}
	ceilingName := ""
	if raw, ok := env.(ceilingEnv); ok {
		ceilingName = fmt.Sprintf("raw-sql-ceiling-%dc", raw.CeilingConns())
		scenarios = append(scenarios, scenario{ceilingName, "jobs/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
			return raw.RawCeiling(ctx, c, dsn, cfg.Jobs, raw.CeilingConns())
		}})
	}
	logCeilingName := ""
	if raw, ok := env.(variantCeilingEnv); ok {
		logCeilingName = fmt.Sprintf("raw-sql-ceiling-logs-%dc", raw.CeilingConns())
		for _, v := range []struct {
			name    string
			measure func(context.Context, *queuety.Client, string, int, int) (float64, error)
		}{
			{fmt.Sprintf("raw-sql-ceiling-2step-%dc", raw.CeilingConns()), raw.RawCeilingTwoStep},
			{logCeilingName, raw.RawCeilingLogs},
		} {
			scenarios = append(scenarios, scenario{v.name, "jobs/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return v.measure(ctx, c, dsn, cfg.Jobs, raw.CeilingConns())
			}})
		}
	}
	var minCeilingNames []string
	if raw, ok := env.(minCeilingEnv); ok {
		for _, conns := range minCeilingConns {
			name := fmt.Sprintf("raw-sql-min-ceiling-%dc", conns)
			minCeilingNames = append(minCeilingNames, name)
			scenarios = append(scenarios, scenario{name, "jobs/s", func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				return raw.RawMinCeiling(ctx, c, dsn, cfg.Jobs, conns)
			}})
		}
	}
	want := map[string]bool{}
	for _, s := range cfg.Scenarios {
		want[s] = true
	}
	results := map[string]*Result{}
	for _, s := range scenarios {
		if len(want) > 0 && !want[s.name] {
			continue
		}
		r := &Result{Name: s.name, Unit: s.unit}
		results[s.name] = r
		rep.Results = append(rep.Results, r)
	}
	var peer *peerRunner
	if cfg.Peer != nil {
		if ps := peerScenarios(cfg.Peer.Name, cfg.Workers, want); len(ps) > 0 {
			var err error
			if peer, err = newPeerRunner(ctx, *cfg.Peer, ps, cfg.Jobs, cfg.Concurrency); err != nil {
				return nil, err
			}
			defer peer.close()
		}
	}
	probes := newProbeRunner(env, cfg, want, rep)
	var server serverCPU
	if sc, ok := env.(serverCPUEnv); ok {
		server = sc.ServerCPU(ctx)
	}
	// Interleave runs (run 1 of every scenario, then run 2, ...) so noise
	// from other work on the machine falls on all scenarios alike.
	for run := 0; run < cfg.Runs; run++ {
		for _, s := range scenarios {
			r := results[s.name]
			if r == nil {
				continue
			}
			meter := &cpuMeter{server: server}
			rate, err := runOnce(withMeter(ctx, meter), env, s.run, rep)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			r.Runs = append(r.Runs, rate)
			if meter.measured {
				r.ClientCPU = append(r.ClientCPU, meter.selfUS)
				if meter.serverUS >= 0 {
					r.ServerCPU = append(r.ServerCPU, meter.serverUS)
				}
			}
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "run %d/%d %-20s %10.0f %s\n", run+1, cfg.Runs, s.name, rate, s.unit)
			}
		}
		if err := probes.round(ctx, run, rep); err != nil {
			return nil, err
		}
		if peer != nil {
			got, err := peer.round(ctx)
			if err != nil {
				return nil, err
			}
			addPeerRound(rep, got)
			if cfg.Progress != nil {
				for _, r := range got.Results {
					fmt.Fprintf(cfg.Progress, "run %d/%d %-20s %10.0f %s\n", run+1, cfg.Runs, r.Name, median(r.Runs), r.Unit)
				}
			}
		}
	}
	if err := probes.finish(ctx, rep); err != nil {
		return nil, err
	}
	for _, r := range rep.Results {
		r.Median = median(r.Runs)
	}
	ceilings := map[string]bool{ceilingName: true, logCeilingName: true}
	var minCeiling *Result
	for i := len(minCeilingNames) - 1; i >= 0; i-- { // the most connections that ran
		ceilings[minCeilingNames[i]] = true
		if c := results[minCeilingNames[i]]; c != nil && c.Median > 0 && minCeiling == nil {
			minCeiling = c
		}
	}
	for _, r := range rep.Results {
		if r.Unit != "jobs/s" || r.Name == "dispatch" || ceilings[r.Name] || rep.Peer != nil && strings.HasPrefix(r.Name, rep.Peer.Name+"-") {
			continue
		}
		if minCeiling != nil {
			r.OfMinCeiling, r.OfMinCeilingPaired = r.Median/minCeiling.Median, pairedRatio(r.Runs, minCeiling.Runs)
			r.MinCeiling = minCeiling.Name
		}
		if c := results[ceilingName]; c != nil && c.Median > 0 {
			r.OfCeiling, r.OfCeilingPaired = r.Median/c.Median, pairedRatio(r.Runs, c.Runs)
		}
		if c := results[logCeilingName]; c != nil && c.Median > 0 {
			r.OfLogCeiling, r.OfLogCeilingPaired = r.Median/c.Median, pairedRatio(r.Runs, c.Runs)
		}
	}
	peerShares(rep)
	return rep, nil
}

// runOnce runs a scenario on a fresh store from env, and notes the store
// in rep the first time.
func runOnce(ctx context.Context, env Env, run func(context.Context, *queuety.Client, string) (float64, error), rep *Report) (float64, error) {
	dsn, cleanup, err := env.Fresh(ctx)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	c, err := open(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if rep.Store == "" {
		info := clientseam.StoreOf(c).Info()
		rep.Store, rep.Server, rep.Schema = info.Driver, info.Server, info.Schema
	}
	return run(ctx, c, dsn)
}

// pairedRatio is the median of runs[i] / ceiling[i].
func pairedRatio(runs, ceiling []float64) float64 {
	var ratios []float64
	for i := range min(len(runs), len(ceiling)) {
		if ceiling[i] > 0 {
			ratios = append(ratios, runs[i]/ceiling[i])
		}
	}
	return median(ratios)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Format writes the report as a table.
func (r *Report) Format(w io.Writer) {
	schema := ""
	if r.Schema != "" {
		schema = ", schema " + r.Schema
	}
	fmt.Fprintf(w, "store %s (%s%s), %d jobs per run, median of %d runs\n", r.Store, r.Server, schema, r.Jobs, r.Runs)
	fmt.Fprintf(w, "%d cores, %s, load average %.1f at the start, %s\n", r.Machine.Cores, r.Machine.GoVersion, r.Machine.LoadAvg, r.Machine.Date)
	fmt.Fprintf(w, "%-28s %12s  %-10s %10s %9s %8s  %s\n", "scenario", "median", "unit", "of ceiling", "of +logs", "of min", "runs")
	var cpu []*Result
	for _, res := range r.Results {
		if len(res.ClientCPU) > 0 {
			cpu = append(cpu, res)
		}
		line := fmt.Sprintf("%-28s %12s  %-10s %10s %9s %8s  %s", res.Name, formatValue(res.Median, res.Unit), res.Unit,
			percent(res.OfCeiling), percent(res.OfLogCeiling), percent(res.OfMinCeiling), formatValues(res.Runs, res.Unit))
		if len(res.Extra) > 0 {
			line += "  (" + formatExtra(res.Extra) + ")"
		}
		fmt.Fprintln(w, line)
	}
	defer r.formatPeer(w)
	if len(cpu) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCPU per unit over the timed window, median (µs); paired: median of each run's rate over the ceiling runs of its round\n")
	fmt.Fprintf(w, "%-28s %10s %10s %10s %10s %10s %10s\n", "scenario", "this proc", "server", "total", "paired", "+logs", "min")
	for _, res := range cpu {
		server, total := "", median(res.ClientCPU)
		if len(res.ServerCPU) > 0 {
			server = fmt.Sprintf("%.1f", median(res.ServerCPU))
			total += median(res.ServerCPU)
		}
		fmt.Fprintf(w, "%-28s %10.1f %10s %10.1f %10s %10s %10s\n", res.Name, median(res.ClientCPU), server, total,
			percent(res.OfCeilingPaired), percent(res.OfLogCeilingPaired), percent(res.OfMinCeilingPaired))
	}
}

// percent formats a share as a whole percentage; empty when unset.
func percent(share float64) string {
	if share <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", share*100)
}

func open(ctx context.Context, dsn string, opts ...queuety.Option) (*queuety.Client, error) {
	return queuety.Open(ctx, dsn, append([]queuety.Option{queuety.WithLogger(quiet())}, opts...)...)
}

func noopRequests(n int) []queuety.JobRequest {
	reqs := make([]queuety.JobRequest, n)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "noop", Payload: queuety.State{"i": i}}
	}
	return reqs
}

// dispatchAll dispatches reqs with DispatchMany in batches of 1000.
func dispatchAll(ctx context.Context, c *queuety.Client, reqs []queuety.JobRequest) error {
	for i := 0; i < len(reqs); i += 1000 {
		if _, err := c.DispatchMany(ctx, reqs[i:min(i+1000, len(reqs))]); err != nil {
			return err
		}
	}
	return nil
}

// dispatch times DispatchMany of n jobs, and meters its CPU: a job's
// insert, which the drains leave out of their windows (they time the jobs
// dispatched before them) while a workflow's next steps and a for-each
// step's branches are inserted in theirs.
func dispatch(ctx context.Context, c *queuety.Client, n int) (float64, error) {
	reqs := noopRequests(n)
	m := meterFrom(ctx)
	m.start()
	start := time.Now()
	if err := dispatchAll(ctx, c, reqs); err != nil {
		return 0, err
	}
	rate := float64(n) / time.Since(start).Seconds()
	m.stop(float64(n))
	return rate, nil
}

// drain dispatches n no-op jobs (untimed), then times workers draining them.
func drain(ctx context.Context, setup *queuety.Client, dsn string, n, workers, concurrency int) (float64, error) {
	if err := dispatchAll(ctx, setup, noopRequests(n)); err != nil {
		return 0, err
	}
	return runWorkers(ctx, dsn, workers, concurrency, noopHandler, n, allCompleted(setup, n), float64(n))
}

// noopHandler registers the no-op job handler the drains run.
func noopHandler(w *worker.Worker) {
	w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
}

// allCompleted checks, after a drain, that the store holds n completed
// jobs and nothing else.
func allCompleted(setup *queuety.Client, n int) func(context.Context) error {
	return func(ctx context.Context) error {
		counts, err := setup.Counts(ctx)
		if err != nil {
			return err
		}
		for _, c := range counts {
			if c.Status != queuetytype.JobCompleted || c.Count != int64(n) {
				return fmt.Errorf("after the drain the store holds %d %s jobs, want %d completed and nothing else", c.Count, c.Status, n)
			}
		}
		return nil
	}
}

// workflows dispatches n 3-step workflows (untimed), then times workers
// running them; the rate is steps per second.
func workflows(ctx context.Context, setup *queuety.Client, dsn string, n, workers, concurrency int) (float64, error) {
	def := queuety.WorkflowDefinition{Name: "bench_three_step", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "mark"}, {Type: queuetytype.StepSingle, Handler: "mark"}, {Type: queuetytype.StepSingle, Handler: "mark"},
	}}
	for i := range n {
		if _, err := setup.DispatchWorkflow(ctx, def, queuety.State{"n": i}); err != nil {
			return 0, err
		}
	}
	return runWorkers(ctx, dsn, workers, concurrency, func(w *worker.Worker) {
		w.HandleStep("mark", func(_ context.Context, s queuety.State) (queuety.State, error) {
			return queuety.State{"marked": len(s)}, nil
		})
	}, 3*n, workflowsCompleted(setup, n), float64(3*n))
}

// fanOut dispatches n workflows, each a for_each over items items
// (untimed), then times workers running every branch to completion; the
// rate is branches per second. The branch handler is registered with
// HandleForEachItem when itemOnly is set, with HandleForEach otherwise
// (the worker then copies the state for each branch).
func fanOut(ctx context.Context, setup *queuety.Client, dsn string, n, items, workers, concurrency int, itemOnly bool) (float64, error) {
	def := queuety.WorkflowDefinition{Name: "bench_fan_out", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepForEach, ItemsKey: "items", Handler: "item", ResultKey: "results"},
	}}
	list := make([]any, items)
	for i := range list {
		list[i] = i
	}
	for range n {
		if _, err := setup.DispatchWorkflow(ctx, def, queuety.State{"items": list}); err != nil {
			return 0, err
		}
	}
	return runWorkers(ctx, dsn, workers, concurrency, func(w *worker.Worker) {
		if itemOnly {
			w.HandleForEachItem("item", func(_ context.Context, item any, _ int) (queuety.State, error) {
				return queuety.State{"done": item}, nil
			})
			return
		}
		w.HandleForEach("item", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
			return queuety.State{"done": item}, nil
		})
	}, n*items, workflowsCompleted(setup, n), float64(n*items))
}

// workflowsCompleted checks, after a run, that n workflows completed.
func workflowsCompleted(setup *queuety.Client, n int) func(context.Context) error {
	return func(ctx context.Context) error {
		wfs, err := setup.ListWorkflows(ctx, driver.WorkflowFilter{Status: queuetytype.WorkflowCompleted, Limit: n})
		if err != nil {
			return err
		}
		if len(wfs) != n {
			return fmt.Errorf("after the run %d of %d workflows completed", len(wfs), n)
		}
		return nil
	}
}

// completions counts attempts recorded as completed (a worker's
// Finished hook) and closes done once it has counted want of them. The
// run is timed by it, so nothing polls the store while the workers drain
// it: the tables serve the workers alone, as they serve the raw ceiling.
type completions struct {
	want  int64
	count atomic.Int64
	once  sync.Once
	done  chan struct{}
}

// finished counts a recorded attempt that completed. The engine's own
// jobs (a for_each step's placeholder, delays, signal waits) are not
// the units a scenario counts.
func (c *completions) finished(j *driver.Job, err error) {
	if err != nil || engine.IsInternalHandler(j.Handler) {
		return
	}
	if c.count.Add(1) == c.want {
		c.once.Do(func() { close(c.done) })
	}
}

// runWorkers starts workers (all on one client, as an application runs
// several workers in one process), waits until they have completed want
// attempts, checks the store with verify (untimed), and returns units per
// second of wall time.
func runWorkers(ctx context.Context, dsn string, workers, concurrency int, register func(*worker.Worker), want int, verify func(context.Context) error, units float64, opts ...worker.Option) (float64, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	c, err := open(ctx, dsn, queuety.SkipMigrate())
	if err != nil {
		return 0, err
	}
	defer func() {
		cancel()
		wg.Wait()
		c.Close()
	}()
	count := &completions{want: int64(want), done: make(chan struct{})}
	ws := make([]*worker.Worker, workers)
	for i := range ws {
		ws[i] = worker.New(c, append([]worker.Option{worker.Concurrency(concurrency), worker.NoMaintenance(),
			worker.PollInterval(10 * time.Millisecond), worker.WithLogger(quiet()), worker.WithHooks(worker.Hooks{Finished: count.finished})}, opts...)...)
		register(ws[i])
	}
	meter := meterFrom(ctx)
	meter.start()
	start := time.Now()
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(runCtx)
		}()
	}
	timer := time.NewTimer(10 * time.Minute)
	defer timer.Stop()
	select {
	case <-count.done:
	case <-timer.C:
		return 0, fmt.Errorf("%d of %d attempts completed within 10 minutes", count.count.Load(), want)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	elapsed := time.Since(start)
	meter.stop(units)
	cancel()
	wg.Wait()
	if err := verify(ctx); err != nil {
		return 0, err
	}
	return units / elapsed.Seconds(), nil
}

// RandomSuffix returns a short random hex string for table prefixes.
func RandomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
