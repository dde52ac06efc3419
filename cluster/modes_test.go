//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// mode is a way to run the workers: through which nodes, and whether
// their sessions replicate (wsrep_on).
type mode struct {
	name  string
	nodes []int // the node of each of the three workers
	local bool  // sessions with wsrep_on = OFF: node1 as a single server
}

var modes = []mode{
	{name: "single server", nodes: []int{0, 0, 0}, local: true},
	{name: "one node", nodes: []int{0, 0, 0}},
	{name: "spread", nodes: []int{0, 1, 2}},
}

// figures are one measurement of a mode.
type figures struct {
	jobsPerS, stepsPerS float64
	conflicts           int64     // certification failures + brute-force aborts
	units               int       // jobs + steps run
	serverCPU           []float64 // CPU seconds of each node's server
	clientCPU           float64   // CPU seconds of the test process (workers)
}

// TestGaleraModes measures, on one cluster, the three ways to run the
// workers: through one node (the usual Galera advice), spread over the
// three nodes, and node1 as a single server (sessions with wsrep_on =
// OFF, so nothing is replicated or certified). For each it drains jobs and
// runs three-step workflows, and prints jobs/s, steps/s, the
// certification-conflict rate and the CPU each node's server used. It runs
// only when QUEUETY_GALERA_MODES is set:
//
//	QUEUETY_GALERA_MODES=1 go test -tags galera -count=1 -v -run TestGaleraModes ./cluster/
//
// QUEUETY_GALERA_MODES_JOBS, _WORKFLOWS and _REPEAT (the median of that
// many runs is printed) set the scale.
func TestGaleraModes(t *testing.T) {
	if os.Getenv("QUEUETY_GALERA_MODES") == "" {
		t.Skip("set QUEUETY_GALERA_MODES=1 to measure the cluster modes")
	}
	jobs := scaleOf("QUEUETY_GALERA_MODES_JOBS", 5000)
	workflows := scaleOf("QUEUETY_GALERA_MODES_WORKFLOWS", 500)
	repeat := scaleOf("QUEUETY_GALERA_MODES_REPEAT", 1)
	c := galera.Start(t)
	var lines []string
	for _, m := range modes {
		var runs []figures
		for rep := range repeat {
			runs = append(runs, measure(t, c, m, fmt.Sprintf("gm_%s_%d", strings.ReplaceAll(m.name, " ", "_"), rep), jobs, workflows))
		}
		slices.SortFunc(runs, func(a, b figures) int { return int(a.jobsPerS - b.jobsPerS) })
		med := runs[len(runs)/2]
		var stepRates []float64
		for _, r := range runs {
			stepRates = append(stepRates, r.stepsPerS)
		}
		slices.Sort(stepRates)
		med.stepsPerS = stepRates[len(stepRates)/2]
		cpu := make([]string, len(med.serverCPU))
		for i, s := range med.serverCPU {
			cpu[i] = fmt.Sprintf("%.0f", 1e6*s/float64(med.units))
		}
		lines = append(lines, fmt.Sprintf("| %s | %.0f | %.0f | %.2f%% | %s | %.0f |", m.name, med.jobsPerS, med.stepsPerS,
			100*float64(med.conflicts)/float64(med.units), strings.Join(cpu, " / "), 1e6*med.clientCPU/float64(med.units)))
	}
	t.Logf("%d jobs and %d three-step workflows per run, median of %d, 3 workers of concurrency 8:\n"+
		"| mode | drain jobs/s | workflow steps/s | conflicts per unit | server CPU µs per unit, node1 / node2 / node3 | worker CPU µs per unit |\n"+
		"|---|---|---|---|---|---|\n%s", jobs, workflows, repeat, strings.Join(lines, "\n"))
}

// measure runs one drain and one workflow run in mode m on database db.
func measure(t *testing.T, c *galera.Cluster, m mode, db string, jobs, workflows int) figures {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	qs := modeClients(ctx, t, c, m, db)
	check := syncedDB(t, c.Node(0), db)
	if m.local {
		check = localDB(t, c.Node(0), db)
	}
	var f figures
	cert0, bf0 := conflicts(ctx, t, c)
	cpu0, client0 := serverCPU(c), clientCPU()

	for start := 0; start < jobs; start += 500 {
		var reqs []queuety.JobRequest
		for i := start; i < min(jobs, start+500); i++ {
			reqs = append(reqs, queuety.JobRequest{Handler: "count", Payload: map[string]any{"i": i}})
		}
		_, err := qs[(start/500)%len(qs)].DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}
	r := newRuns(jobs)
	t0 := time.Now()
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
			i, _ := p.Int("i")
			r.add(strconv.FormatInt(i, 10))
			return nil
		})
	})
	<-r.done
	waitFor(ctx, t, "jobs still open", func() bool {
		return count(ctx, t, check, "SELECT COUNT(*) FROM "+db+"_queuety_jobs WHERE status IN ('pending', 'processing')") == 0
	})
	f.jobsPerS = float64(jobs) / time.Since(t0).Seconds()
	stop()

	def := queuety.WorkflowDefinition{Name: "three", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s1"},
		{Type: queuetytype.StepSingle, Handler: "s2"},
		{Type: queuetytype.StepSingle, Handler: "s3"},
	}}
	for i := range workflows {
		_, err := qs[i%len(qs)].DispatchWorkflow(ctx, def, queuety.State{"k": i})
		require.NoError(t, err)
	}
	steps := newRuns(3 * workflows)
	t0 = time.Now()
	stop = startWorkers(t, qs, 8, func(w *worker.Worker) {
		for s := 1; s <= 3; s++ {
			name := "s" + strconv.Itoa(s)
			w.HandleStep(name, func(_ context.Context, st queuety.State) (queuety.State, error) {
				k, _ := st.Int("k")
				steps.add(fmt.Sprintf("%d/%s", k, name))
				return queuety.State{name: true}, nil
			})
		}
	})
	<-steps.done
	waitFor(ctx, t, "workflows still running", func() bool {
		return count(ctx, t, check, "SELECT COUNT(*) FROM "+db+"_queuety_workflows WHERE status <> 'completed'") == 0
	})
	f.stepsPerS = float64(3*workflows) / time.Since(t0).Seconds()
	stop()

	cert, bf := conflicts(ctx, t, c)
	f.conflicts = cert - cert0 + bf - bf0
	f.units = jobs + 3*workflows
	cpu1 := serverCPU(c)
	for i := range cpu1 {
		f.serverCPU = append(f.serverCPU, cpu1[i]-cpu0[i])
	}
	f.clientCPU = clientCPU() - client0
	t.Logf("%s (%s): %.0f jobs/s, %.0f steps/s, %d conflicts, server CPU s %v, worker CPU s %.2f",
		m.name, db, f.jobsPerS, f.stepsPerS, f.conflicts, f.serverCPU, f.clientCPU)
	return f
}

// modeClients opens a client for each worker of m on database db (table
// prefix db+"_"), creating the database first.
func modeClients(ctx context.Context, t *testing.T, c *galera.Cluster, m mode, db string) []*queuety.Client {
	t.Helper()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	if m.local {
		_, err = conn.ExecContext(ctx, "SET SESSION wsrep_on = OFF")
		require.NoError(t, err)
	}
	_, err = conn.ExecContext(ctx, "CREATE DATABASE "+db)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var out []*queuety.Client
	for _, i := range m.nodes {
		dsn := c.Node(i).DSN(db, db+"_")
		if m.local {
			dsn += "&wsrep_on=OFF"
		}
		q, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet))
		require.NoError(t, err)
		t.Cleanup(func() { q.Close() })
		out = append(out, q)
	}
	return out
}

// localDB opens node's database db with sessions that do not replicate.
func localDB(t *testing.T, n *galera.Node, db string) *sql.DB {
	t.Helper()
	dsn := n.DriverDSN(db)
	if strings.Contains(dsn, "?") {
		dsn += "&wsrep_on=OFF"
	} else {
		dsn += "?wsrep_on=OFF"
	}
	d, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// serverCPU returns the CPU seconds (user + system) each node's server
// has used, from /proc (0 where it cannot be read).
func serverCPU(c *galera.Cluster) []float64 {
	var out []float64
	for _, n := range c.Nodes() {
		out = append(out, procCPU(n.Pid()))
	}
	return out
}

func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // clock ticks at USER_HZ = 100
}

// clientCPU returns the CPU seconds the test process has used.
func clientCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
