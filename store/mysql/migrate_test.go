package mysql_test

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// versionRow is one row of the migrations table.
type versionRow struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

func versionRows(t *testing.T, db *sql.DB, prefix string) []versionRow {
	t.Helper()
	rows, err := db.Query("SELECT version, name, applied_at FROM `" + prefix + "queuety_go_migrations` ORDER BY version")
	require.NoError(t, err)
	defer rows.Close()
	var out []versionRow
	for rows.Next() {
		var r versionRow
		var at string
		require.NoError(t, rows.Scan(&r.Version, &r.Name, &at))
		r.AppliedAt, err = time.Parse("2006-01-02 15:04:05.999999", at)
		require.NoError(t, err)
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// schemaOf returns SHOW CREATE TABLE of every table under prefix, keyed and
// written without the prefix.
func schemaOf(t *testing.T, db *sql.DB, prefix string) map[string]string {
	t.Helper()
	names, err := testdb.Tables(db, prefix)
	require.NoError(t, err)
	autoIncrement := regexp.MustCompile(` AUTO_INCREMENT=\d+`)
	out := map[string]string{}
	for _, n := range names {
		var name, ddl string
		require.NoError(t, db.QueryRow("SHOW CREATE TABLE `"+n+"`").Scan(&name, &ddl))
		out[strings.TrimPrefix(n, prefix)] = autoIncrement.ReplaceAllString(strings.ReplaceAll(ddl, prefix, "{prefix}"), "")
	}
	return out
}

func openStore(t *testing.T, dsn string) *mysql.Store {
	t.Helper()
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s.(*mysql.Store)
}

// TestMigrateFreshPrefix migrates an empty prefix from scratch with several
// stores at once, then again, and checks that the tables the other tests
// clone from their template are exactly what it created.
func TestMigrateFreshPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Admin(t)
	dsn, prefix := testdb.DSN(t)

	const racers = 3
	stores := make([]*mysql.Store, racers)
	for i := range stores {
		stores[i] = openStore(t, dsn)
	}
	errs := make(chan error, racers)
	var start sync.WaitGroup
	start.Add(1)
	for _, s := range stores {
		go func() {
			start.Wait()
			errs <- s.Migrate(ctx)
		}()
	}
	start.Done()
	for range racers {
		require.NoError(t, <-errs, "concurrent migrate")
	}
	v, err := stores[0].SchemaVersion(ctx)
	require.NoError(t, err, "schema version")
	require.Equal(t, mysql.LatestVersion, v, "schema version")
	applied := versionRows(t, db, prefix)
	require.Len(t, applied, mysql.LatestVersion, "versions recorded")
	fresh := schemaOf(t, db, prefix)
	assert.Len(t, fresh, 26, "tables after migrating: 16 of Queuety's and 10 of the Go engine's")

	// Idempotent: a second run changes nothing.
	require.NoError(t, openStore(t, dsn).Migrate(ctx), "second migrate")
	assert.Equal(t, applied, versionRows(t, db, prefix), "versions after a second migrate")
	assert.Equal(t, fresh, schemaOf(t, db, prefix), "tables after a second migrate")

	// A cloned prefix has the same tables and versions, and migrating it
	// only reads the versions.
	cloneDSN, clonePrefix := migrated.DSN(t)
	cloned := schemaOf(t, db, clonePrefix)
	for name, ddl := range fresh {
		assert.Equalf(t, ddl, cloned[name], "%s differs between a fresh migration and the template (is the template stale?)", name)
	}
	for name := range cloned {
		assert.Containsf(t, fresh, name, "the template has %s, a fresh migration does not", name)
	}
	clonedRows := versionRows(t, db, clonePrefix)
	require.Len(t, clonedRows, len(applied), "cloned versions")
	for i := range applied {
		assert.Equal(t, applied[i].Version, clonedRows[i].Version, "cloned version")
		assert.Equal(t, applied[i].Name, clonedRows[i].Name, "cloned version name")
	}
	require.NoError(t, openStore(t, cloneDSN).Migrate(ctx), "migrate the clone")
	assert.Equal(t, clonedRows, versionRows(t, db, clonePrefix), "versions after migrating the clone")
	assert.Equal(t, cloned, schemaOf(t, db, clonePrefix), "tables after migrating the clone")
}
