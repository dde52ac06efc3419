package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/internal/testdb"
)

// On PostgreSQL a run measures the raw ceiling on the store's own tables
// and reports each drain's share of it, as on MySQL.
func TestPostgresRawCeiling(t *testing.T) {
	t.Parallel()
	testdb.PostgresAdmin(t) // skips (fails under CI) without a server
	dsn, _ := testdb.PostgresDSN(t)
	env, err := EnvFor(dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, results := runBench(t, env, Config{Jobs: 600, Runs: 2, Concurrency: 20,
		Scenarios: []string{"drain-1w", "raw-sql-ceiling-4c"}})
	drain := requireResult(t, results, "drain-1w", "jobs/s", 2)
	ceiling := requireResult(t, results, "raw-sql-ceiling-4c", "jobs/s", 2)
	assert.Positive(t, ceiling.Median, "the ceiling's rate")
	assert.InDelta(t, drain.Median/ceiling.Median, drain.OfCeiling, 1e-9, "the drain's share of the ceiling")
	assert.Zero(t, ceiling.OfCeiling, "a ceiling is no share of itself")
}
