package cli

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/bench"
)

// benchProbeFlags declares the flags of the latency, RSS, backlog and sweep
// scenarios on fs and returns the function that reads them.
func benchProbeFlags(fs *flag.FlagSet) func() (bench.Probes, error) {
	rate := fs.Int("latency-rate", bench.LatencyRateDefault, "jobs per second the latency scenarios dispatch, one Dispatch call each")
	latencyFor := fs.Duration("latency-for", bench.LatencyForDefault, "how long the latency scenarios dispatch")
	backlogs := fs.String("backlogs", "1000,100000", "pending-job counts of the backlog scenarios, comma-separated (empty: none; 1000000 is opt-in)")
	drain := fs.Int("backlog-drain", bench.BacklogDrainDefault, "jobs each backlog run drains out of the backlog")
	sweepRows := fs.Int("sweep-rows", bench.SweepRowsDefault, "jobs and workflows the sweep scenario loads, none expired (0: no sweep scenario)")
	passes := fs.Int("sweep-passes", bench.SweepPassesDefault, "times each sweep is timed")
	return func() (bench.Probes, error) {
		for _, f := range []struct {
			name string
			v    int
		}{{"latency-rate", *rate}, {"backlog-drain", *drain}, {"sweep-passes", *passes}} {
			if f.v < 1 {
				return bench.Probes{}, Usagef("--%s must be at least 1, got %d", f.name, f.v)
			}
		}
		if *latencyFor <= 0 {
			return bench.Probes{}, Usagef("--latency-for must be positive, got %s", *latencyFor)
		}
		if *sweepRows < 0 {
			return bench.Probes{}, Usagef("--sweep-rows must not be negative, got %d", *sweepRows)
		}
		p := bench.Probes{LatencyRate: *rate, LatencyFor: *latencyFor, BacklogDrain: *drain, SweepRows: *sweepRows,
			SweepPasses: *passes, Backlogs: []int{}, Child: benchChild}
		if p.SweepRows == 0 {
			p.SweepRows = -1
		}
		for _, part := range splitList(*backlogs) {
			n, err := strconv.Atoi(part)
			if err != nil || n < 1 {
				return bench.Probes{}, Usagef("--backlogs: want positive counts like 1000,100000, got %q", part)
			}
			p.Backlogs = append(p.Backlogs, n)
		}
		return p, nil
	}
}

// benchChild starts this program's bench command as a bench child
// process; the command runs bench.ChildMain when it finds bench.ChildEnv.
func benchChild(ctx context.Context) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.CommandContext(ctx, exe, "bench")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
