package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
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
	check := func(what string) {
		t.Helper()
		got, _ := indexDefs(t, db, schema, "queuety_jobs")
		assert.NotContains(t, got, "queuety_jobs_idx_status", what)
		assert.NotContains(t, got, "queuety_jobs_idx_workflow", what)
		assert.Contains(t, got["queuety_jobs_idx_workflow_step"], "WHERE (workflow_id IS NOT NULL)", what)
		assert.Contains(t, got, "queuety_jobs_idx_status_completed", what)
	}
	check("fresh tables")

	// The tables as version 1 made them before.
	remigrate(t, s, db,
		"DROP INDEX queuety_jobs_idx_workflow_step",
		"CREATE INDEX queuety_jobs_idx_status ON queuety_jobs (status)",
		"CREATE INDEX queuety_jobs_idx_workflow ON queuety_jobs (workflow_id, step_index)",
		"DELETE FROM queuety_go_migrations WHERE version = 2")
	check("after version 2")
}

// TestVersion3UpdatesWorkflowsInPlace: a fresh store and tables version
// 2 made both end with the workflows' fillfactor, their partial parent,
// deadline and failed_at indexes and without the indexes no query
// reads, and a step's rewrite of a workflow row (state and
// current step) is a heap-only update: no index gets an entry.
func TestVersion3UpdatesWorkflowsInPlace(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testdb.PostgresDSN(t)
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	db := s.(*postgres.Store).DB
	check := func(what string) {
		t.Helper()
		var opts string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COALESCE(array_to_string(c.reloptions, ','), '') FROM pg_class c "+
			"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = 'queuety_workflows'", schema).Scan(&opts))
		assert.Equal(t, "fillfactor=50", opts, what)
		defs, got := indexDefs(t, db, schema, "queuety_workflows", "queuety_workflow_events")
		for ix, col := range map[string]string{
			"idx_parent": "parent_workflow_id", "idx_deadline": "deadline_at", "idx_go_run_deadline": "run_deadline_at",
			"idx_go_wait_deadline": "wait_deadline_at", "idx_go_status_failed": "failed_at",
		} {
			assert.Contains(t, defs["queuety_workflows_"+ix], "WHERE ("+col+" IS NOT NULL)", what)
		}
		assert.NotContains(t, defs["queuety_workflows_idx_status_completed"], "WHERE", what)
		assert.Contains(t, defs["queuety_workflows_idx_go_running"], "(id) WHERE ((status)::text = 'running'::text)", what)
		assert.Equal(t, []string{
			"queuety_workflow_events_idx_created", "queuety_workflow_events_idx_timeline", "queuety_workflow_events_idx_workflow",
			"queuety_workflow_events_pkey",
			"queuety_workflows_idx_deadline", "queuety_workflows_idx_go_run_deadline", "queuety_workflows_idx_go_running", "queuety_workflows_idx_go_status_failed",
			"queuety_workflows_idx_go_wait_deadline", "queuety_workflows_idx_parent", "queuety_workflows_idx_status_completed",
			"queuety_workflows_pkey",
		}, got, what)
	}
	check("fresh tables")

	// Workflows written together fill pages; each row's step then
	// rewrites it, in one transaction so the counts are its own.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	const n = 300
	_, err = tx.ExecContext(ctx, "INSERT INTO queuety_workflows (name, status, state, total_steps) "+
		"SELECT 'w', 'running', repeat('x', 200), 3 FROM generate_series(1, ?)", n)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE queuety_workflows SET state = repeat('y', 200), current_step = 1, status = 'running'")
	require.NoError(t, err)
	var upd, hot int
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE schemaname = ? AND relname = 'queuety_workflows'", schema).Scan(&upd, &hot))
	assert.Equal(t, n, upd, "updates")
	assert.Equal(t, n, hot, "heap-only updates")
	require.NoError(t, tx.Rollback())

	// The tables as version 2 left them.
	remigrate(t, s, db,
		"ALTER TABLE queuety_workflows RESET (fillfactor)",
		"DROP INDEX queuety_workflows_idx_go_running",
		"DROP INDEX queuety_workflows_idx_parent",
		"CREATE INDEX queuety_workflows_idx_parent ON queuety_workflows (parent_workflow_id)",
		"DROP INDEX queuety_workflows_idx_go_status_failed",
		"CREATE INDEX queuety_workflows_idx_go_status_failed ON queuety_workflows (status, failed_at)",
		"CREATE INDEX queuety_workflows_idx_status ON queuety_workflows (status)",
		"CREATE INDEX queuety_workflow_events_idx_job ON queuety_workflow_events (job_id)",
		"CREATE INDEX queuety_workflow_events_idx_step_name ON queuety_workflow_events (workflow_id, step_name)",
		"DELETE FROM queuety_go_migrations WHERE version = 3")
	check("after version 3")
}

// indexDefs returns the indexes of tables in schema: each one's
// definition by name, and the names in order.
func indexDefs(t *testing.T, db *sql.DB, schema string, tables ...string) (map[string]string, []string) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(),
		"SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = ? AND tablename = ANY(?) ORDER BY indexname", schema, tables)
	require.NoError(t, err)
	defer rows.Close()
	defs := map[string]string{}
	var names []string
	for rows.Next() {
		var n, def string
		require.NoError(t, rows.Scan(&n, &def))
		defs[n] = def
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return defs, names
}

// remigrate runs stmts (tables put back as an earlier version left them,
// and that version's record removed), then migrates s again.
func remigrate(t *testing.T, s driver.Store, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		_, err := db.ExecContext(context.Background(), q)
		require.NoError(t, err, q)
	}
	require.NoError(t, s.Migrate(context.Background()))
}

// TestVersion4LeavesPartialJobIndexes: a fresh store and tables version 3
// made end with the same jobs and logs indexes: no index of the jobs but
// the primary key without a predicate, idx_queue_status_available given
// way to the pending jobs' idx_go_due, and the logs' idx_event without
// the started and completed rows.
func TestVersion4LeavesPartialJobIndexes(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testdb.PostgresDSN(t)
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))
	db := s.(*postgres.Store).DB
	fresh, _ := indexDefs(t, db, schema, "queuety_jobs", "queuety_logs")
	for name, def := range fresh {
		if name != "queuety_jobs_pkey" && strings.HasPrefix(name, "queuety_jobs_") {
			assert.Contains(t, def, " WHERE ", name)
		}
	}
	assert.NotContains(t, fresh, "queuety_jobs_idx_queue_status_available")
	assert.Contains(t, fresh["queuety_jobs_idx_go_due"], "(queue, available_at) WHERE ((status)::text = 'pending'::text)")
	assert.Contains(t, fresh["queuety_jobs_idx_status_completed"], "WHERE (completed_at IS NOT NULL)")
	assert.Contains(t, fresh["queuety_jobs_idx_go_status_failed"], "(status, failed_at) WHERE (failed_at IS NOT NULL)")
	assert.Contains(t, fresh["queuety_logs_idx_event"], "WHERE ((event)::text <> ALL")

	// The tables as version 3 left them.
	remigrate(t, s, db,
		"DROP INDEX queuety_jobs_idx_go_due",
		"DROP INDEX queuety_jobs_idx_go_status_failed",
		"CREATE INDEX queuety_jobs_idx_queue_status_available ON queuety_jobs (queue, status, available_at, priority)",
		"DROP INDEX queuety_jobs_idx_status_completed",
		"CREATE INDEX queuety_jobs_idx_status_completed ON queuety_jobs (status, completed_at)",
		"DROP INDEX queuety_jobs_idx_handler_status",
		"CREATE INDEX queuety_jobs_idx_handler_status ON queuety_jobs (handler, status)",
		"DROP INDEX queuety_logs_idx_event",
		"CREATE INDEX queuety_logs_idx_event ON queuety_logs (event)",
		"DELETE FROM queuety_go_migrations WHERE version = 4")
	migrated, _ := indexDefs(t, db, schema, "queuety_jobs", "queuety_logs")
	assert.Equal(t, fresh, migrated, "after version 4")
}
