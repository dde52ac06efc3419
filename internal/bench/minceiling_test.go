package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
)

// The minimal-table ceiling drains every job of its own table, on one
// connection and on four, and drops the table afterwards.
func TestRawMinCeilingDrainsItsOwnTableAndDropsIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mysqlEnv, c, dsn := freshMySQL(ctx, t)
	prefix := clientseam.StoreOf(c).Info().Prefix

	for _, conns := range minCeilingConns {
		rate, err := mysqlEnv.RawMinCeiling(ctx, c, dsn, 1234, conns)
		require.NoError(t, err, "%d connections", conns)
		assert.Positive(t, rate, "%d connections: jobs/s", conns)
	}
	var tables int
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
		prefix+minCeilingTable).Scan(&tables))
	assert.Zero(t, tables, "the minimal table is dropped after the run")
	var pending int
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+prefix+"queuety_jobs").Scan(&pending))
	assert.Zero(t, pending, "Queuety's jobs table is not used")
}

// A run with the minimal-table ceilings reports each drain's share of
// the Queuety-table ceiling and of the minimal one (four connections),
// in the JSON and in the table; the ceilings get no share of each other.
func TestDrainShareOfMinimalCeiling(t *testing.T) {
	t.Parallel()
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	rep, results := runBench(t, env, Config{Jobs: 400, Runs: 2, Concurrency: 20,
		Scenarios: []string{"drain-1w", "raw-sql-ceiling-4c", "raw-sql-min-ceiling-1c", "raw-sql-min-ceiling-4c"}})
	drain := requireResult(t, results, "drain-1w", "jobs/s", 2)
	plain := requireResult(t, results, "raw-sql-ceiling-4c", "jobs/s", 2)
	min1 := requireResult(t, results, "raw-sql-min-ceiling-1c", "jobs/s", 2)
	min4 := requireResult(t, results, "raw-sql-min-ceiling-4c", "jobs/s", 2)
	assert.InDelta(t, drain.Median/plain.Median, drain.OfCeiling, 1e-9, "share of the Queuety-table ceiling")
	assert.InDelta(t, drain.Median/min4.Median, drain.OfMinCeiling, 1e-9, "share of the minimal ceiling")
	assert.InDelta(t, pairedRatio(drain.Runs, min4.Runs), drain.OfMinCeilingPaired, 1e-9, "paired share of the minimal ceiling")
	assert.Equal(t, "raw-sql-min-ceiling-4c", drain.MinCeiling, "the minimal ceiling the share is of")
	for _, c := range []*Result{plain, min1, min4} {
		assert.Zero(t, c.OfCeiling, "%s: a ceiling is no share of another", c.Name)
		assert.Zero(t, c.OfMinCeiling, "%s: a ceiling is no share of another", c.Name)
	}

	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	var got struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, "drain-1w", got.Results[0]["name"])
	assert.InDelta(t, drain.OfMinCeiling, got.Results[0]["of_min_ceiling"], 1e-9, "JSON: of_min_ceiling")
	assert.Equal(t, "raw-sql-min-ceiling-4c", got.Results[0]["min_ceiling"], "JSON: min_ceiling")
	var table bytes.Buffer
	rep.Format(&table)
	assert.Contains(t, table.String(), "of min", "table header")
	assert.Contains(t, table.String(), percent(drain.OfMinCeiling), "table: the drain's share of the minimal ceiling")
}

// The minimal-table ceiling is MySQL's only: SQLite runs none, and its
// drains report no share of one.
func TestSQLiteHasNoMinimalCeiling(t *testing.T) {
	t.Parallel()
	_, results := runBench(t, SQLiteEnv{}, Config{Jobs: 200, Runs: 1, Concurrency: 20,
		Scenarios: []string{"drain-1w", "raw-sql-min-ceiling-1c", "raw-sql-min-ceiling-4c"}})
	require.Len(t, results, 1, "results: %v", results)
	assert.Zero(t, requireResult(t, results, "drain-1w", "jobs/s", 1).OfMinCeiling, "share of a minimal ceiling")
}
