package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeSchema migrates two tables, one holding a version row, and counts
// its migrations.
func fakeSchema(t *testing.T, db *sql.DB) (*Schema, *atomic.Int32) {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	s := &Schema{Key: "testdb test " + hex.EncodeToString(b), Migrate: func(ctx context.Context, dsn string) error {
		runs.Add(1)
		prefix := dsn[strings.LastIndex(dsn, "prefix=")+len("prefix="):]
		for _, stmt := range []string{
			"CREATE TABLE `" + prefix + "items` (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT NULL, KEY idx_name (name))",
			"CREATE TABLE `" + prefix + "versions` (version INT NOT NULL PRIMARY KEY)",
			"INSERT INTO `" + prefix + "versions` VALUES (1), (2)",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}}
	tp := templateFor(s)
	t.Cleanup(func() {
		if _, err := db.Exec("DROP TABLE IF EXISTS `" + tp.marker + "`"); err != nil {
			t.Error(err)
		}
		Drop(t, db, tp.prefix)
	})
	return s, &runs
}

func TestMigratedClonesTemplate(t *testing.T) {
	db := Admin(t)
	s, runs := fakeSchema(t, db)
	tp := templateFor(s)

	var first string
	t.Run("first", func(t *testing.T) {
		_, first = Migrated(t, s)
		names, err := Tables(db, first)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{first + "items", first + "versions"}; !slices.Equal(names, want) {
			t.Fatalf("tables %v, want %v", names, want)
		}
		var versions int
		if err := db.QueryRow("SELECT COUNT(*) FROM `" + first + "versions`").Scan(&versions); err != nil || versions != 2 {
			t.Fatalf("%d version rows copied (%v), want 2", versions, err)
		}
		var ddl string
		if err := db.QueryRow("SHOW CREATE TABLE `"+first+"items`").Scan(new(string), &ddl); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ddl, "idx_name") || !strings.Contains(ddl, "AUTO_INCREMENT") {
			t.Errorf("clone lost the index or the auto-increment:\n%s", ddl)
		}
	})
	if names, err := Tables(db, first); err != nil || len(names) != 0 {
		t.Errorf("clone tables left after the test: %v (%v)", names, err)
	}
	if names, err := Tables(db, tp.prefix); err != nil || len(names) != 2 {
		t.Errorf("template tables after a test: %v (%v), want both kept", names, err)
	}
	t.Run("second", func(t *testing.T) {
		if _, p := Migrated(t, s); p == first {
			t.Errorf("prefix %s handed out twice", p)
		}
	})
	if n := runs.Load(); n != 1 {
		t.Errorf("migrated %d times, want once", n)
	}

	// Another test binary finds the template complete and reuses it.
	delete(templates, s.Key)
	t.Run("reuse", func(t *testing.T) { Migrated(t, s) })
	if n := runs.Load(); n != 1 {
		t.Errorf("migrated %d times after the template was complete, want once", n)
	}
}

func TestMigratedRebuildsIncompleteTemplate(t *testing.T) {
	db := Admin(t)
	s, runs := fakeSchema(t, db)
	tp := templateFor(s)
	// A build that died after creating a table, before the marker.
	if _, err := db.Exec("CREATE TABLE `" + tp.prefix + "items` (id INT)"); err != nil {
		t.Fatal(err)
	}
	_, prefix := Migrated(t, s)
	if n := runs.Load(); n != 1 {
		t.Errorf("migrated %d times, want once", n)
	}
	var cols int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", prefix+"items").Scan(&cols); err != nil || cols != 2 {
		t.Errorf("clone of the rebuilt template has %d columns (%v), want 2", cols, err)
	}
}

func TestBuildPrunesIdleTemplates(t *testing.T) {
	db := Admin(t)
	idle, _ := fakeSchema(t, db)
	recent, _ := fakeSchema(t, db)
	t.Run("build", func(t *testing.T) {
		Migrated(t, idle)
		Migrated(t, recent)
	})
	if _, err := db.Exec("UPDATE `" + templateFor(idle).marker + "` SET used_at = NOW() - INTERVAL 2 DAY"); err != nil {
		t.Fatal(err)
	}
	fresh, _ := fakeSchema(t, db)
	t.Run("build another", func(t *testing.T) { Migrated(t, fresh) })
	for _, c := range []struct {
		s    *Schema
		kept bool
	}{{idle, false}, {recent, true}, {fresh, true}} {
		tp := templateFor(c.s)
		names, err := Tables(db, tp.prefix)
		if err != nil {
			t.Fatal(err)
		}
		marked, err := tableExists(context.Background(), mustConn(t, db), tp.marker)
		if err != nil {
			t.Fatal(err)
		}
		if kept := len(names) == 2 && marked; kept != c.kept {
			t.Errorf("template %s: tables %v, marker %v; want kept=%v", tp.prefix, names, marked, c.kept)
		}
	}
}

func mustConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
