package bench

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
)

// A drain and the ceiling report the CPU a job costs this process, one
// figure per run, and on a local MariaDB the server's too; the table
// prints them with the paired share.
func TestDrainCPUPerJob(t *testing.T) {
	eachStore(t, func(t *testing.T, env Env) {
		ceiling := "raw-sql-ceiling-1c"
		if _, ok := env.(*MySQLEnv); ok {
			ceiling = "raw-sql-ceiling-4c"
		}
		rep, results := runBench(t, env, Config{Jobs: 400, Runs: 2, Concurrency: 20, Scenarios: []string{"drain-1w", ceiling}})
		for _, name := range []string{"drain-1w", ceiling} {
			r := requireResult(t, results, name, "jobs/s", 2)
			require.Len(t, r.ClientCPU, 2, "%s: CPU of this process per run", name)
			for _, us := range r.ClientCPU {
				assert.Positive(t, us, "%s: µs a job", name)
				assert.Less(t, us, 1e5, "%s: µs a job", name)
			}
		}
		drain := results["drain-1w"]
		assert.InDelta(t, pairedRatio(drain.Runs, results[ceiling].Runs), drain.OfCeilingPaired, 1e-9, "paired share")
		if sc, ok := env.(serverCPUEnv); ok && sc.ServerCPU(context.Background()) != nil {
			require.Len(t, drain.ServerCPU, 2, "server CPU per run")
			for _, us := range drain.ServerCPU {
				assert.Positive(t, us, "server µs a job")
			}
		} else {
			assert.Empty(t, drain.ServerCPU, "no server process to read")
		}
		var table bytes.Buffer
		rep.Format(&table)
		assert.Contains(t, table.String(), "CPU per unit over the timed window")
	})
}

// The server's pid is found for the local test server, and its CPU time
// read from /proc, which grows while it works.
func TestLocalServerCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	pid := env.(*MySQLEnv).ServerPID(context.Background())
	if pid == 0 {
		t.Skip("the server does not run on this machine, or its pid file cannot be read")
	}
	before := processCPU(pid)
	require.Positive(t, before, "server CPU time")
	db, err := env.(*MySQLEnv).admin()
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for processCPU(pid) == before && time.Now().Before(deadline) {
		_, err := db.Exec("SELECT BENCHMARK(2000000, MD5('queuety'))")
		require.NoError(t, err)
	}
	assert.Greater(t, processCPU(pid), before, "server CPU time after work")
}

func TestProcessCPUReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	start := processCPU(os.Getpid())
	deadline := time.Now().Add(30 * time.Second)
	for x := 0; processCPU(os.Getpid()) <= start && time.Now().Before(deadline); x++ { // burn CPU until a tick is counted
		_ = x * x
	}
	assert.Greater(t, processCPU(os.Getpid()), start, "CPU time after work")
	assert.Zero(t, processCPU(-1), "no such process")
}

func TestPairedRatio(t *testing.T) {
	assert.InDelta(t, 0.5, pairedRatio([]float64{1, 4, 3}, []float64{2, 4, 12}), 1e-9, "median of 0.5, 1, 0.25")
	assert.InDelta(t, 0.75, pairedRatio([]float64{3, 1}, []float64{4, 0}), 1e-9, "a ceiling of 0 is left out")
	assert.Zero(t, pairedRatio(nil, nil))
}

// A window's CPU counts the growth of the processes read at both ends and
// all of a process that started during it; a process that exited adds
// nothing, so the figure never falls below zero.
func TestCPUTimesSince(t *testing.T) {
	before := cpuTimes{1: 10 * time.Second, 2: 5 * time.Second, 3: 7 * time.Second}
	after := cpuTimes{1: 12 * time.Second, 3: 2 * time.Second, 4: time.Second}
	// pid 1 grew by 2 s; pid 2 exited; pid 3's time fell (a reused pid):
	// all of it; pid 4 started.
	assert.Equal(t, 5*time.Second, after.since(before))
	assert.Equal(t, 15*time.Second, after.total())
	assert.Zero(t, cpuTimes{}.since(before), "every process exited")
}

// On a local PostgreSQL the server's CPU is that of every postgres
// process, read from /proc, and grows while a backend works; a drain
// reports it per run.
func TestLocalPostgresServerCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	env, err := EnvFor(testdb.PostgresBaseDSN(t))
	require.NoError(t, err)
	read := env.(*PostgresEnv).ServerCPU(context.Background())
	if read == nil {
		t.Skip("the server does not run on this machine")
	}
	first := read()
	before := first.total()
	require.Positive(t, before, "server CPU time")
	db := testdb.PostgresAdmin(t)
	// The sum is over the server's live processes: a backend of another
	// test that exits takes its time with it, so the sum can fall. Work
	// until it has risen past the first reading.
	deadline := time.Now().Add(30 * time.Second)
	after := read().since(first)
	for after <= 0 && time.Now().Before(deadline) {
		_, err := db.Exec("SELECT count(*) FROM generate_series(1, 2000000)")
		require.NoError(t, err)
		after = read().since(first)
	}
	assert.Positive(t, after, "server CPU time used after the first reading")

	_, results := runBench(t, env, Config{Jobs: 400, Runs: 2, Concurrency: 20, Scenarios: []string{"drain-1w"}})
	drain := requireResult(t, results, "drain-1w", "jobs/s", 2)
	require.Len(t, drain.ServerCPU, 2, "server CPU per run")
	for _, us := range drain.ServerCPU {
		assert.Positive(t, us, "server µs a job")
	}
}
