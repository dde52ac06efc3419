package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/sqlite"
)

// TestMigrateFreshFileConcurrently migrates a new database file from four
// stores at once: every version is applied and recorded once, and a second
// Migrate changes nothing.
func TestMigrateFreshFileConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fresh.db")
	stores := make([]driver.Store, 4)
	for i := range stores {
		s, err := driver.Open(ctx, "sqlite://"+path+"?busy_timeout=10000")
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "migrate from store %d", i)
	}

	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	versions := func() []int {
		rows, err := db.QueryContext(ctx, "SELECT version FROM queuety_go_migrations ORDER BY version")
		require.NoError(t, err)
		defer rows.Close()
		var out []int
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			out = append(out, v)
		}
		require.NoError(t, rows.Err())
		return out
	}
	want := make([]int, sqlite.LatestVersion)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, versions(), "each version recorded once")

	require.NoError(t, stores[0].Migrate(ctx), "second migrate")
	assert.Equal(t, want, versions(), "a second migrate records nothing")
	var cols int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_table_info('queuety_schedules') WHERE name IN ('workflow_definition', 'catch_up', 'last_run_ref', 'pending_run')").Scan(&cols))
	assert.Equal(t, 4, cols, "version 2's columns exist once")
}

// TestParseDSNRejectsMalformedInput: parameters that do not parse, are
// unknown or repeated are errors, never ignored.
func TestParseDSNRejectsMalformedInput(t *testing.T) {
	for _, dsn := range []string{
		"sqlite://q.db?prefix=a_;x",
		"sqlite://q.db?prefx=a_",
		"sqlite://q.db?prefix=a_&prefix=b_",
		"sqlite://q.db?prefix=a-b",
		"sqlite://q.db?busy_timeout=soon",
		"sqlite://",
		"q.db",
	} {
		_, err := sqlite.ParseDSN(dsn)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "%s", dsn)
	}
	_, err := sqlite.ParseDSN("sqlite://q.db?table_jobs=jobs")
	assert.ErrorContains(t, err, "sqlite DSN parameter table_jobs: table names can be changed on the MySQL store only")
	c, err := sqlite.ParseDSN("sqlite://q.db?prefix=a_&busy_timeout=250")
	require.NoError(t, err)
	assert.Equal(t, "a_", c.Prefix)
	assert.Equal(t, "q.db", c.Path)
}
