package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// The test binary doubles as the bench child process: the cross-process
// scenarios start it again with ChildEnv set (Probes.Child's default).
func TestMain(m *testing.M) {
	if IsChild() {
		if err := ChildMain(context.Background(), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// eachStore runs fn on SQLite and on the MariaDB/MySQL test server (skipped
// when it cannot be reached), in parallel.
func eachStore(t *testing.T, fn func(t *testing.T, env Env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, SQLiteEnv{})
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		env, err := EnvFor(testdb.BaseDSN(t))
		require.NoError(t, err)
		fn(t, env)
	})
}

// runBench runs cfg on env and returns the results by name.
func runBench(t *testing.T, env Env, cfg Config) (*Report, map[string]*Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, env, cfg)
	require.NoError(t, err)
	want := "sqlite"
	switch env.(type) {
	case *MySQLEnv:
		want = "mysql"
	case *PostgresEnv:
		want = "postgres"
	}
	require.Equal(t, want, rep.Store, "store the scenarios ran on")
	byName := map[string]*Result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
	}
	return rep, byName
}

// requireResult checks that result name is there with runs values, all
// positive, and the median among them.
func requireResult(t *testing.T, results map[string]*Result, name, unit string, runs int) *Result {
	t.Helper()
	r := results[name]
	require.NotNil(t, r, "result %s", name)
	assert.Equal(t, unit, r.Unit, "%s: unit", name)
	require.Len(t, r.Runs, runs, "%s: runs", name)
	for _, v := range r.Runs {
		assert.Positive(t, v, "%s: a run", name)
	}
	assert.Equal(t, median(r.Runs), r.Median, "%s: median", name)
	return r
}

func TestLatencyScenarios(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, env Env) {
		_, results := runBench(t, env, Config{Runs: 1, Concurrency: 10, Scenarios: []string{"latency-inproc", "latency-xproc"},
			Probes: Probes{LatencyRate: 100, LatencyFor: 300 * time.Millisecond}})
		require.Len(t, results, 4, "results")
		for _, s := range []string{"latency-inproc", "latency-xproc"} {
			p50 := requireResult(t, results, s+"-p50", "ms", 1)
			p99 := requireResult(t, results, s+"-p99", "ms", 1)
			assert.GreaterOrEqual(t, p99.Median, p50.Median, "%s: p99 against p50", s)
			assert.Less(t, p99.Median, float64(latencyTimeout/time.Millisecond), "%s: p99", s)
			assert.Equal(t, map[string]float64{"poll_interval_ms": 1000, "rate_per_s": 100, "jobs": 30}, p99.Extra, "%s: settings", s)
		}
	})
}

// TestChainScenarios: a chain's links alternate between two workers that
// poll every second or slower; each link starts on a wake-up, well within
// the poll interval (cross-process on MySQL, whose store carries wake-ups
// between processes; SQLite's child process finds its links by polling).
func TestChainScenarios(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, env Env) {
		_, results := runBench(t, env, Config{Runs: 1, Concurrency: 2, Scenarios: []string{"chain-inproc", "chain-xproc"}})
		require.Len(t, results, 4, "results")
		for _, s := range []string{"chain-inproc", "chain-xproc"} {
			p50 := requireResult(t, results, s+"-p50", "ms", 1)
			p99 := requireResult(t, results, s+"-p99", "ms", 1)
			assert.GreaterOrEqual(t, p99.Median, p50.Median, "%s: p99 against p50", s)
			assert.Equal(t, map[string]float64{"poll_interval_ms": 1000, "idle_poll_interval_ms": 10000, "links": chainLinks, "work_ms": 2000}, p99.Extra, "%s: settings", s)
			if _, sqlite := env.(SQLiteEnv); s == "chain-xproc" && sqlite {
				continue
			}
			assert.Less(t, p50.Median, float64(worker.PollIntervalDefault/time.Millisecond), "%s: p50 of a link, against the poll interval", s)
		}
	})
}

func TestRSSScenario(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	eachStore(t, func(t *testing.T, env Env) {
		_, results := runBench(t, env, Config{Jobs: 300, Runs: 1, Concurrency: 10, Scenarios: []string{"rss-drain-1w"}})
		require.Len(t, results, 1, "results")
		r := requireResult(t, results, "rss-drain-1w", "MiB", 1)
		assert.Less(t, r.Median, 4096.0, "peak RSS of a worker draining 300 jobs")
		assert.Equal(t, map[string]float64{"jobs": 300, "concurrency": 10}, r.Extra, "settings")
	})
}

func TestBacklogScenario(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, env Env) {
		_, results := runBench(t, env, Config{Runs: 2, Concurrency: 50, Scenarios: []string{"backlog-500"},
			Probes: Probes{Backlogs: []int{500, 700}, BacklogDrain: 200}})
		require.Len(t, results, 2, "results (backlog-700 not asked for)")
		claim := requireResult(t, results, "backlog-500-claim", "ms", 2)
		requireResult(t, results, "backlog-500-drain", "jobs/s", 2)
		assert.Equal(t, 500.0, claim.Extra["backlog"], "backlog")
		assert.Equal(t, 200.0, claim.Extra["drained"], "jobs drained per run")
		assert.Contains(t, claim.Extra, "load_s", "load time")
	})
}

func TestSweepScenario(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, env Env) {
		var progress bytes.Buffer
		_, results := runBench(t, env, Config{Scenarios: []string{"sweep-1500"}, Progress: &progress,
			Probes: Probes{SweepRows: 1500, SweepPasses: 2}})
		require.Len(t, results, 3, "results")
		for _, s := range []string{"deadlines", "timeouts", "stale"} {
			r := requireResult(t, results, "sweep-1500-"+s, "ms", 2)
			assert.Equal(t, 1500.0, r.Extra["jobs"], "%s: jobs", s)
			assert.Equal(t, 1500.0, r.Extra["workflows"], "%s: workflows", s)
		}
		assert.Contains(t, progress.String(), "loaded 1500 jobs and 1500 workflows", "progress")
	})
}

// TestLoadedRows checks what the backlog and sweep scenarios measure on:
// the row counts and states of their cloned tables.
func TestLoadedRows(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, env Env) {
		ctx := context.Background()
		dsn, cleanup, err := env.Fresh(ctx)
		require.NoError(t, err)
		t.Cleanup(cleanup)
		c, err := open(ctx, dsn, queuety.WithStaleTimeout(2*sweepHorizon), queuety.WithLeaseTimeout(2*sweepHorizon))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		db, err := rawDB(c)
		require.NoError(t, err)
		prefix := clientseam.StoreOf(c).Info().Prefix
		count := func(table, where string) int {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+prefix+table+" WHERE "+where).Scan(&n))
			return n
		}
		refill, err := loadBacklog(ctx, c, 12345)
		require.NoError(t, err)
		assert.Equal(t, 12345, count("queuety_jobs", "queue = 'default' AND status = 'pending' AND handler = 'noop'"), "backlog")
		require.NoError(t, refill(ctx, 55))
		assert.Equal(t, 12400, count("queuety_jobs", "queue = 'default' AND status = 'pending'"), "backlog after a refill")

		require.NoError(t, loadUnexpired(ctx, c, 1000))
		assert.Equal(t, 1000, count("queuety_jobs", "status = 'processing' AND start_to_close_at IS NOT NULL AND heartbeat_deadline_at IS NOT NULL"),
			"processing jobs with armed deadlines")
		assert.Equal(t, 1000, count("queuety_workflows", "status = 'running' AND deadline_at IS NOT NULL AND run_deadline_at IS NOT NULL"),
			"running workflows with deadlines")
	})
}

func TestSQLiteCeiling(t *testing.T) {
	t.Parallel()
	rep, results := runBench(t, SQLiteEnv{}, Config{Jobs: 500, Runs: 1, Concurrency: 20, Scenarios: []string{"drain-1w", "raw-sql-ceiling-1c"}})
	assert.Equal(t, "sqlite", rep.Store, "store")
	ceiling := requireResult(t, results, "raw-sql-ceiling-1c", "jobs/s", 1)
	drain := requireResult(t, results, "drain-1w", "jobs/s", 1)
	assert.Zero(t, ceiling.OfCeiling, "the ceiling's own share")
	assert.InDelta(t, drain.Median/ceiling.Median, drain.OfCeiling, 1e-9, "drain-1w: share of the ceiling")
}

func TestReportJSONAndTable(t *testing.T) {
	t.Parallel()
	rep, _ := runBench(t, SQLiteEnv{}, Config{Jobs: 100, Runs: 2, Scenarios: []string{"dispatch", "latency-inproc"},
		Probes: Probes{LatencyRate: 100, LatencyFor: 100 * time.Millisecond}})
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	var got struct {
		Store   string `json:"store"`
		Runs    int    `json:"runs"`
		Machine struct {
			Cores     int    `json:"cores"`
			GoVersion string `json:"go_version"`
			Date      string `json:"date"`
		} `json:"machine"`
		Results []struct {
			Name   string             `json:"name"`
			Unit   string             `json:"unit"`
			Runs   []float64          `json:"runs"`
			Median float64            `json:"median"`
			Extra  map[string]float64 `json:"extra"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	assert.Equal(t, "sqlite", got.Store, "store")
	assert.Equal(t, 2, got.Runs, "runs")
	assert.Equal(t, runtime.NumCPU(), got.Machine.Cores, "cores")
	assert.Equal(t, runtime.Version(), got.Machine.GoVersion, "Go version")
	_, err = time.Parse(time.RFC3339, got.Machine.Date)
	assert.NoError(t, err, "date %q", got.Machine.Date)
	var names []string
	for _, r := range got.Results {
		names = append(names, r.Name)
		assert.Len(t, r.Runs, 2, "%s: runs", r.Name)
		assert.Positive(t, r.Median, "%s: median", r.Name)
	}
	assert.Equal(t, []string{"dispatch", "latency-inproc-p50", "latency-inproc-p99"}, names, "results in order")
	assert.Equal(t, "ms", got.Results[1].Unit, "latency unit")
	assert.Equal(t, 1000.0, got.Results[1].Extra["poll_interval_ms"], "poll interval next to the latency")

	var table bytes.Buffer
	rep.Format(&table)
	assert.Contains(t, table.String(), "latency-inproc-p99", "table")
	assert.Contains(t, table.String(), "poll_interval_ms=1000", "table")
	assert.Contains(t, table.String(), fmt.Sprintf("%d cores", runtime.NumCPU()), "table")
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	assert.Equal(t, 5.0, percentile(xs, 0.5), "p50")
	assert.Equal(t, 10.0, percentile(xs, 0.99), "p99")
	assert.Equal(t, 1.0, percentile(xs, 0.01), "p1")
	assert.Equal(t, 0.0, percentile(nil, 0.5), "no values")
	assert.Equal(t, []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, xs, "input untouched")
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "0.43", formatValue(0.4321, "ms"))
	assert.Equal(t, "515.0", formatValue(515, "ms"))
	assert.Equal(t, "28.7", formatValue(28.66, "MiB"))
	assert.Equal(t, "5642", formatValue(5642.4, "jobs/s"))
	assert.Equal(t, "jobs=30 load_s=1.5 poll_interval_ms=1000", formatExtra(map[string]float64{"poll_interval_ms": 1000, "jobs": 30, "load_s": 1.46}))
}
