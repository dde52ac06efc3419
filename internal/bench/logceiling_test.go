package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
)

// freshMySQL returns the MySQL bench environment and a client on fresh
// tables of the test server, with their DSN; both go after the test.
func freshMySQL(ctx context.Context, t *testing.T) (*MySQLEnv, *queuety.Client, string) {
	t.Helper()
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	dsn, cleanup, err := env.Fresh(ctx)
	require.NoError(t, err)
	t.Cleanup(cleanup)
	c, err := open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return env.(*MySQLEnv), c, dsn
}

// The log ceiling drains every job and writes the two rows a Go worker
// writes for a plain job's success: 'started' and 'completed', each with
// the job id, handler, queue and attempt, and the duration on the second.
func TestRawCeilingLogsWritesQueuetysLogRows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mysqlEnv, c, dsn := freshMySQL(ctx, t)

	const jobs = 250
	rate, err := mysqlEnv.RawCeilingLogs(ctx, c, dsn, jobs, mysqlEnv.CeilingConns())
	require.NoError(t, err)
	assert.Positive(t, rate, "jobs/s")
	prefix := clientseam.StoreOf(c).Info().Prefix
	var completed int
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+prefix+"queuety_jobs WHERE status = 'completed' AND attempts = 1").Scan(&completed))
	assert.Equal(t, jobs, completed, "jobs completed on their first attempt")
	rows, err := c.DB().QueryContext(ctx, "SELECT event, COUNT(*), COUNT(DISTINCT job_id), SUM(attempt = 1), SUM(duration_ms IS NOT NULL) FROM "+
		prefix+"queuety_logs WHERE handler = 'noop' AND queue = 'default' GROUP BY event ORDER BY event")
	require.NoError(t, err)
	defer rows.Close()
	got := map[string][4]int{}
	for rows.Next() {
		var event string
		var n [4]int
		require.NoError(t, rows.Scan(&event, &n[0], &n[1], &n[2], &n[3]))
		got[event] = n
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string][4]int{
		"started":   {jobs, jobs, jobs, 0},
		"completed": {jobs, jobs, jobs, jobs},
	}, got, "log rows by event: rows, jobs, first attempts, with a duration")
}

// A run with both ceilings reports each drain's share of either.
func TestDrainShareOfBothCeilings(t *testing.T) {
	t.Parallel()
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	_, results := runBench(t, env, Config{Jobs: 400, Runs: 2, Concurrency: 20,
		Scenarios: []string{"drain-1w", "raw-sql-ceiling-4c", "raw-sql-ceiling-logs-4c"}})
	drain := requireResult(t, results, "drain-1w", "jobs/s", 2)
	plain := requireResult(t, results, "raw-sql-ceiling-4c", "jobs/s", 2)
	logs := requireResult(t, results, "raw-sql-ceiling-logs-4c", "jobs/s", 2)
	assert.InDelta(t, drain.Median/plain.Median, drain.OfCeiling, 1e-9, "share of the plain ceiling")
	assert.InDelta(t, drain.Median/logs.Median, drain.OfLogCeiling, 1e-9, "share of the ceiling with log rows")
	assert.InDelta(t, pairedRatio(drain.Runs, logs.Runs), drain.OfLogCeilingPaired, 1e-9, "paired share of the ceiling with log rows")
	assert.Zero(t, logs.OfCeiling, "a ceiling is no share of the other")
	assert.Zero(t, plain.OfLogCeiling, "a ceiling is no share of the other")
}

// The two-step raw ceiling claims every job once and completes it.
func TestRawCeilingTwoStepDrainsEveryJob(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mysqlEnv, c, dsn := freshMySQL(ctx, t)

	const jobs = 1000
	rate, err := mysqlEnv.RawCeilingTwoStep(ctx, c, dsn, jobs, mysqlEnv.CeilingConns())
	require.NoError(t, err)
	assert.Positive(t, rate, "jobs/s")
	var completed, once int
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(attempts = 1), 0) FROM "+clientseam.StoreOf(c).Info().Prefix+
		"queuety_jobs WHERE status = 'completed'").Scan(&completed, &once))
	assert.Equal(t, jobs, completed, "jobs completed")
	assert.Equal(t, jobs, once, "jobs claimed once")
}

// A fan-out run counts branches, not the for_each placeholder jobs the
// engine runs beside them: it ends once every branch has completed, and
// every workflow has (the run's own check fails otherwise). Counting the
// placeholders ended it up to one in eleven jobs early.
func TestFanOutCountsBranchesOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, env Env) {
		_, results := runBench(t, env, Config{Runs: 1, Concurrency: 2, FanOuts: []FanOut{{Workflows: 40, Items: 10}},
			Scenarios: []string{"fanout-40x10-4w", "fanout-40x10-4w-item"}})
		requireResult(t, results, "fanout-40x10-4w", "branches/s", 1)
		requireResult(t, results, "fanout-40x10-4w-item", "branches/s", 1)
	})
}
