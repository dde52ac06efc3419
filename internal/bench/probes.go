package bench

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"sort"
	"time"
)

// Probes configures the scenarios that measure something other than a
// throughput: dispatch-to-start latency, a worker's peak RSS, claims out of
// a large backlog and sweeps over large tables. A zero field takes its
// default.
type Probes struct {
	// LatencyRate is how many jobs per second the latency scenarios
	// dispatch, one Dispatch call at a time (default 200).
	LatencyRate int
	// LatencyFor is how long the latency scenarios dispatch (default 10 s).
	LatencyFor time.Duration
	// Backlogs are the pending-job counts of the backlog-<N> scenarios
	// (default 1,000 and 100,000). Non-nil and empty: none.
	Backlogs []int
	// BacklogDrain is how many jobs each backlog run drains out of the
	// backlog (default 5,000, at most the backlog).
	BacklogDrain int
	// SweepRows is how many jobs and how many workflows the sweep-<N>
	// scenario loads (default 1,000,000 of each). Negative: no sweep
	// scenario.
	SweepRows int
	// SweepPasses is how many times each sweep is timed (default 5).
	SweepPasses int
	// Child returns the command that starts this program as a bench
	// child process (see ChildMain); bench adds the child's configuration
	// to its environment. The default runs this executable with no
	// arguments, which suits a program whose main (or TestMain) calls
	// ChildMain first. The cross-process latency and RSS scenarios need it.
	Child func(ctx context.Context) *exec.Cmd
}

// Defaults of Probes.
const (
	LatencyRateDefault  = 200
	LatencyForDefault   = 10 * time.Second
	BacklogDrainDefault = 5000
	SweepRowsDefault    = 1000000
	SweepPassesDefault  = 5
)

// BacklogsDefault are the backlog sizes measured by default; 1,000,000 is
// opt-in (--backlogs 1000,100000,1000000).
var BacklogsDefault = []int{1000, 100000}

func (p Probes) withDefaults() Probes {
	if p.LatencyRate <= 0 {
		p.LatencyRate = LatencyRateDefault
	}
	if p.LatencyFor <= 0 {
		p.LatencyFor = LatencyForDefault
	}
	if p.Backlogs == nil {
		p.Backlogs = BacklogsDefault
	}
	if p.BacklogDrain <= 0 {
		p.BacklogDrain = BacklogDrainDefault
	}
	if p.SweepRows == 0 {
		p.SweepRows = SweepRowsDefault
	}
	if p.SweepPasses <= 0 {
		p.SweepPasses = SweepPassesDefault
	}
	if p.Child == nil {
		p.Child = selfCommand
	}
	return p
}

// probe is a scenario that reports several results per run: latency p50
// and p99, or the three sweeps. A probe marked once runs a single time,
// after the interleaved runs, and repeats its measurement inside that run
// (it loads a large table once and measures on it several times).
type probe struct {
	name    string
	results []probeResult
	once    bool
	run     func(ctx context.Context, env Env, rep *Report) (*probeOut, error)
}

// probeOut is what one run of a probe measured.
type probeOut struct {
	// values are by result name: one per result for a per-run probe,
	// several for a once probe.
	values map[string][]float64
	// extra is added to the Extra of every result of the probe (for
	// example how long a backlog took to load).
	extra map[string]float64
}

// probeResult names one result of a probe, with the settings it was
// measured under (Result.Extra).
type probeResult struct {
	name, unit string
	extra      map[string]float64
}

// probesFor returns the probes cfg asks for on env.
func probesFor(env Env, cfg Config) []probe {
	p := cfg.Probes.withDefaults()
	var out []probe
	out = append(out, latencyProbes(p, cfg)...)
	out = append(out, chainProbes(p, cfg)...)
	if rss := rssProbe(p, cfg); rss != nil {
		out = append(out, *rss)
	}
	for _, n := range p.Backlogs {
		out = append(out, backlogProbe(n, p, cfg))
	}
	if p.SweepRows > 0 {
		out = append(out, sweepProbe(p, cfg))
	}
	return out
}

// selected reports whether the probe runs: every probe when want is
// empty, else one whose name or one of whose results is wanted.
func (pr probe) selected(want map[string]bool) bool {
	if len(want) == 0 || want[pr.name] {
		return true
	}
	for _, r := range pr.results {
		if want[r.name] {
			return true
		}
	}
	return false
}

// probeRunner runs the selected probes, adding their results to a report.
type probeRunner struct {
	env     Env
	cfg     Config
	probes  []probe
	results map[string]*Result
}

// newProbeRunner selects the probes of cfg and adds their (empty) results
// to rep.
func newProbeRunner(env Env, cfg Config, want map[string]bool, rep *Report) *probeRunner {
	pr := &probeRunner{env: env, cfg: cfg, results: map[string]*Result{}}
	for _, p := range probesFor(env, cfg) {
		if !p.selected(want) {
			continue
		}
		pr.probes = append(pr.probes, p)
		for _, r := range p.results {
			res := &Result{Name: r.name, Unit: r.unit, Extra: map[string]float64{}}
			for k, v := range r.extra {
				res.Extra[k] = v
			}
			pr.results[r.name] = res
			rep.Results = append(rep.Results, res)
		}
	}
	return pr
}

// round runs the per-run probes once (round run of the interleaved runs).
func (pr *probeRunner) round(ctx context.Context, run int, rep *Report) error {
	for _, p := range pr.probes {
		if !p.once {
			if err := pr.runProbe(ctx, p, run, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish runs the once probes.
func (pr *probeRunner) finish(ctx context.Context, rep *Report) error {
	for _, p := range pr.probes {
		if p.once {
			if err := pr.runProbe(ctx, p, 0, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

func (pr *probeRunner) runProbe(ctx context.Context, p probe, run int, rep *Report) error {
	out, err := p.run(ctx, pr.env, rep)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	vals := out.values
	for _, r := range p.results {
		res := pr.results[r.name]
		res.Runs = append(res.Runs, vals[r.name]...)
		for k, v := range out.extra {
			res.Extra[k] = v
		}
		if pr.cfg.Progress != nil {
			label := fmt.Sprintf("run %d/%d", run+1, pr.cfg.Runs)
			if p.once {
				label = "once"
			}
			fmt.Fprintf(pr.cfg.Progress, "%-9s %-28s %10s %s\n", label, r.name, formatValues(vals[r.name], r.unit), r.unit)
		}
	}
	return nil
}

// percentile returns the nearest-rank q-quantile (0 < q <= 1) of xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
