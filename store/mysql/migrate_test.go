package mysql_test

import (
	"context"
	"database/sql"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []versionRow
	for rows.Next() {
		var r versionRow
		var at string
		if err := rows.Scan(&r.Version, &r.Name, &at); err != nil {
			t.Fatal(err)
		}
		if r.AppliedAt, err = time.Parse("2006-01-02 15:04:05.999999", at); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// schemaOf returns SHOW CREATE TABLE of every table under prefix, keyed and
// written without the prefix.
func schemaOf(t *testing.T, db *sql.DB, prefix string) map[string]string {
	t.Helper()
	names, err := testdb.Tables(db, prefix)
	if err != nil {
		t.Fatal(err)
	}
	autoIncrement := regexp.MustCompile(` AUTO_INCREMENT=\d+`)
	out := map[string]string{}
	for _, n := range names {
		var name, ddl string
		if err := db.QueryRow("SHOW CREATE TABLE `"+n+"`").Scan(&name, &ddl); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(n, prefix)] = autoIncrement.ReplaceAllString(strings.ReplaceAll(ddl, prefix, "{prefix}"), "")
	}
	return out
}

func openStore(t *testing.T, dsn string) *mysql.Store {
	t.Helper()
	s, err := driver.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
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
		if err := <-errs; err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	if v, err := stores[0].SchemaVersion(ctx); err != nil || v != mysql.LatestVersion {
		t.Fatalf("schema version %d (%v), want %d", v, err, mysql.LatestVersion)
	}
	applied := versionRows(t, db, prefix)
	if len(applied) != mysql.LatestVersion {
		t.Fatalf("%d versions recorded, want %d: %+v", len(applied), mysql.LatestVersion, applied)
	}
	fresh := schemaOf(t, db, prefix)
	if len(fresh) != 18 {
		t.Errorf("%d tables after migrating, want 16 of Queuety's and 2 of the Go engine's: %v", len(fresh), fresh)
	}

	// Idempotent: a second run changes nothing.
	if err := openStore(t, dsn).Migrate(ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if again := versionRows(t, db, prefix); !slices.Equal(again, applied) {
		t.Errorf("second migrate changed the versions:\n  before %+v\n  after  %+v", applied, again)
	}
	if again := schemaOf(t, db, prefix); !maps.Equal(again, fresh) {
		t.Errorf("second migrate changed the tables")
	}

	// A cloned prefix has the same tables and versions, and migrating it
	// only reads the versions.
	cloneDSN, clonePrefix := migrated.DSN(t)
	cloned := schemaOf(t, db, clonePrefix)
	for name, ddl := range fresh {
		if cloned[name] != ddl {
			t.Errorf("%s differs between a fresh migration and the template (is the template stale?):\n  fresh  %s\n  cloned %s", name, ddl, cloned[name])
		}
	}
	for name := range cloned {
		if _, ok := fresh[name]; !ok {
			t.Errorf("the template has %s, a fresh migration does not", name)
		}
	}
	clonedRows := versionRows(t, db, clonePrefix)
	if len(clonedRows) != len(applied) {
		t.Fatalf("cloned versions %+v, migrated %+v", clonedRows, applied)
	}
	for i := range applied {
		if clonedRows[i].Version != applied[i].Version || clonedRows[i].Name != applied[i].Name {
			t.Errorf("cloned version %+v, migrated %+v", clonedRows[i], applied[i])
		}
	}
	if err := openStore(t, cloneDSN).Migrate(ctx); err != nil {
		t.Fatalf("migrate the clone: %v", err)
	}
	if again := versionRows(t, db, clonePrefix); !slices.Equal(again, clonedRows) {
		t.Errorf("migrating the clone changed its versions:\n  before %+v\n  after  %+v", clonedRows, again)
	}
	if again := schemaOf(t, db, clonePrefix); !maps.Equal(again, cloned) {
		t.Errorf("migrating the clone changed its tables")
	}
}
