package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/migrate"
	"github.com/queuety/queuety-go/store/postgres"
)

// TestTransactionalMigrationLeavesNothingOfAFailedStep: with a Lock and
// Transactional, a step that fails after creating a table leaves neither
// the table nor a version record, and the steps before it stay applied.
func TestTransactionalMigrationLeavesNothingOfAFailedStep(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testdb.PostgresDSN(t)
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	db := s.(*postgres.Store).DB
	boom := errors.New("boom")
	m := migrate.Migrations{
		List: []migrate.Migration{
			{Version: 1, Name: "one", Up: migrate.Statements(func() []string { return []string{"CREATE TABLE one (id INT)"} })},
			{Version: 2, Name: "two", Up: func(ctx context.Context, x migrate.Execer) error {
				if _, err := x.ExecContext(ctx, "CREATE TABLE two (id INT)"); err != nil {
					return err
				}
				return boom
			}},
		},
		Table:         "versions",
		VersionsTable: "CREATE TABLE IF NOT EXISTS %s (version INT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP(6) NOT NULL)",
		Lock:          migrate.PostgresLock("test:"+schema, 10*time.Second),
		Transactional: true,
	}
	err = m.Apply(ctx, db)
	var me *migrate.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 2, me.Version)
	assert.ErrorIs(t, err, boom)
	tables := map[string]bool{}
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", schema)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables[n] = true
	}
	require.NoError(t, rows.Err())
	assert.True(t, tables["one"], "step 1 applied")
	assert.False(t, tables["two"], "nothing of the failed step")
	var versions int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM versions").Scan(&versions))
	assert.Equal(t, 1, versions, "version records")
}

// TestVersion2LeavesFewerJobIndexes: tables version 1 made with the jobs'
// idx_status and a full idx_workflow lose the first and get the partial
// idx_workflow_step; a fresh store has the same indexes.
func TestVersion2LeavesFewerJobIndexes(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testdb.PostgresDSN(t)
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	db := s.(*postgres.Store).DB
	indexes := func() map[string]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = ? AND tablename = 'queuety_jobs'", schema)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var n, def string
			require.NoError(t, rows.Scan(&n, &def))
			out[n] = def
		}
		require.NoError(t, rows.Err())
		return out
	}
	check := func(what string) {
		t.Helper()
		got := indexes()
		assert.NotContains(t, got, "queuety_jobs_idx_status", what)
		assert.NotContains(t, got, "queuety_jobs_idx_workflow", what)
		assert.Contains(t, got["queuety_jobs_idx_workflow_step"], "WHERE (workflow_id IS NOT NULL)", what)
		assert.Contains(t, got, "queuety_jobs_idx_status_completed", what)
	}
	check("fresh tables")

	// The tables as version 1 made them before.
	for _, q := range []string{
		"DROP INDEX queuety_jobs_idx_workflow_step",
		"CREATE INDEX queuety_jobs_idx_status ON queuety_jobs (status)",
		"CREATE INDEX queuety_jobs_idx_workflow ON queuety_jobs (workflow_id, step_index)",
		"DELETE FROM queuety_go_migrations WHERE version = 2",
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, s.Migrate(ctx))
	check("after version 2")
}
