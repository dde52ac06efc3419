package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/store/migrate"
)

// counted returns three steps that each create a table and count how many
// times they ran; the first waits until every migrator has started, so
// they all reach the runner together.
func counted(table func(string) string, runs *[3]atomic.Int32, started <-chan struct{}) []migrate.Migration {
	step := func(i int, name string) migrate.Migration {
		return migrate.Migration{Version: i + 1, Name: "create " + name, Up: func(ctx context.Context, x migrate.Execer) error {
			if i == 0 {
				<-started
			}
			runs[i].Add(1)
			_, err := x.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table(name)+" (id INTEGER NOT NULL PRIMARY KEY)")
			return err
		}}
	}
	return []migrate.Migration{step(0, "a"), step(1, "b"), step(2, "c")}
}

// migrateConcurrently runs Apply from n goroutines at once and returns
// their errors.
func migrateConcurrently(ctx context.Context, n int, db *sql.DB, m migrate.Migrations, started chan struct{}) []error {
	errs := make([]error, n)
	var ready sync.WaitGroup
	ready.Add(n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ready.Done()
			errs[i] = m.Apply(ctx, db)
		})
	}
	ready.Wait()
	close(started)
	wg.Wait()
	return errs
}

func versions(t *testing.T, db *sql.DB, table string) []int {
	t.Helper()
	rows, err := db.Query("SELECT version FROM " + table + " ORDER BY version")
	require.NoError(t, err)
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		got = append(got, v)
	}
	require.NoError(t, rows.Err())
	return got
}

const mysqlVersions = `CREATE TABLE IF NOT EXISTS %s (
	version INT UNSIGNED NOT NULL PRIMARY KEY,
	name VARCHAR(255) NOT NULL,
	applied_at DATETIME(6) NOT NULL
) ENGINE=InnoDB`

// TestMySQLConcurrentMigratorsApplyEachStepOnce migrates one schema from
// six migrators at once on MariaDB: the lock lets each step run once, every
// version is recorded once, and every migrator succeeds.
func TestMySQLConcurrentMigratorsApplyEachStepOnce(t *testing.T) {
	ctx := context.Background()
	db := testdb.Admin(t)
	prefix := testdb.Prefix(t)
	var runs [3]atomic.Int32
	started := make(chan struct{})
	m := migrate.Migrations{
		List:          counted(func(n string) string { return prefix + n }, &runs, started),
		Table:         prefix + "versions",
		VersionsTable: mysqlVersions,
		Lock:          migrate.MySQLLock("queuety_migrate_test:"+prefix, 60*time.Second),
	}
	for i, err := range migrateConcurrently(ctx, 6, db, m, started) {
		require.NoError(t, err, "migrator %d", i)
	}
	for i := range runs {
		assert.Equal(t, int32(1), runs[i].Load(), "runs of version %d", i+1)
	}
	assert.Equal(t, []int{1, 2, 3}, versions(t, db, m.Table))
	require.NoError(t, m.Apply(ctx, db), "a second run")
	assert.Equal(t, int32(1), runs[0].Load(), "a second run applies nothing")
}

// TestMySQLFailingStepStopsAndReportsVersion: a failing step stops the
// run with an *Error naming its version; the steps before it stay
// recorded, the steps after it do not run, and the next run resumes at
// the failed step.
func TestMySQLFailingStepStopsAndReportsVersion(t *testing.T) {
	ctx := context.Background()
	db := testdb.Admin(t)
	prefix := testdb.Prefix(t)
	broken := errors.New("disk on fire")
	var ran [3]int
	fail := true
	step := func(v int) migrate.Migration {
		return migrate.Migration{Version: v, Name: "step", Up: func(ctx context.Context, x migrate.Execer) error {
			ran[v-1]++
			if v == 2 && fail {
				return broken
			}
			_, err := x.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+prefix+"s"+string(rune('0'+v))+" (id INT PRIMARY KEY)")
			return err
		}}
	}
	m := migrate.Migrations{List: []migrate.Migration{step(1), step(2), step(3)}, Table: prefix + "versions",
		VersionsTable: mysqlVersions, Lock: migrate.MySQLLock("queuety_migrate_test:"+prefix, 60*time.Second)}

	err := m.Apply(ctx, db)
	var merr *migrate.Error
	require.ErrorAs(t, err, &merr)
	assert.Equal(t, 2, merr.Version)
	assert.ErrorIs(t, err, broken)
	assert.EqualError(t, err, "migrate: version 2 (step): disk on fire")
	assert.Equal(t, [3]int{1, 1, 0}, ran, "the step after the failing one does not run")
	assert.Equal(t, []int{1}, versions(t, db, m.Table))

	fail = false
	require.NoError(t, m.Apply(ctx, db))
	assert.Equal(t, [3]int{1, 2, 1}, ran, "the next run resumes at the failed step")
	assert.Equal(t, []int{1, 2, 3}, versions(t, db, m.Table))
}

// TestSQLiteConcurrentMigratorsApplyEachStepOnce: without a lock, each
// step runs in its own transaction, which SQLite's write lock serialises,
// so migrators on separate connections still apply each step once.
func TestSQLiteConcurrentMigratorsApplyEachStepOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer db.Close()
	var runs [3]atomic.Int32
	started := make(chan struct{})
	m := migrate.Migrations{
		List:          counted(func(n string) string { return n }, &runs, started),
		Table:         "versions",
		VersionsTable: "CREATE TABLE IF NOT EXISTS %s (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
		AppliedAt:     func(t time.Time) any { return t.Format(time.RFC3339Nano) },
	}
	for i, err := range migrateConcurrently(ctx, 4, db, m, started) {
		require.NoError(t, err, "migrator %d", i)
	}
	for i := range runs {
		assert.Equal(t, int32(1), runs[i].Load(), "runs of version %d", i+1)
	}
	assert.Equal(t, []int{1, 2, 3}, versions(t, db, m.Table))
}
