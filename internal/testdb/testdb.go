// Package testdb gives tests their own tables on the real MariaDB/MySQL
// server: each call picks a fresh table prefix and drops every table with
// that prefix when the test ends, so tests run in parallel without sharing
// rows. Migrated does the same with tables already migrated, cloned from
// a template that is migrated once.
//
// The server comes from QUEUETY_TEST_MYSQL (a go-sql-driver DSN, default
// root@tcp(127.0.0.1:3306)/test). When it cannot be reached the test is
// skipped, except when CI=true, where it fails: CI must run the MySQL suite.
package testdb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// DefaultDSN is the server used when QUEUETY_TEST_MYSQL is not set.
const DefaultDSN = "root@tcp(127.0.0.1:3306)/test"

var (
	once    sync.Once
	admin   *sql.DB
	baseDSN string
	openErr error
)

func connect() {
	baseDSN = os.Getenv("QUEUETY_TEST_MYSQL")
	if baseDSN == "" {
		baseDSN = DefaultDSN
	}
	cfg, err := driver.ParseDSN(baseDSN)
	if err != nil {
		openErr = fmt.Errorf("QUEUETY_TEST_MYSQL: %w", err)
		return
	}
	cfg.Timeout = 5 * time.Second
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		openErr = err
		return
	}
	admin = sql.OpenDB(conn)
	admin.SetMaxOpenConns(4)
	openErr = admin.Ping()
}

// Admin returns a handle on the test server for direct SQL, or skips (fails
// under CI=true) when the server is unreachable.
func Admin(t testing.TB) *sql.DB {
	t.Helper()
	once.Do(connect)
	requireServer(t, "MySQL", openErr)
	return admin
}

// requireServer skips the test when the named test server could not be
// reached (err), or fails it under CI=true, where every suite must run.
func requireServer(t testing.TB, name string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s test server unreachable (CI=true requires it): %v", name, err)
	}
	t.Skipf("%s test server unreachable, skipping: %v", name, err)
}

// Prefix returns a fresh table prefix and drops its tables after the test.
func Prefix(t testing.TB) string {
	t.Helper()
	db := Admin(t)
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testdb: random prefix: %v", err)
	}
	prefix := "t" + hex.EncodeToString(b) + "_"
	t.Cleanup(func() { Drop(t, db, prefix) })
	return prefix
}

// DSN returns a go-sql-driver DSN for the test server with a fresh prefix.
func DSN(t testing.TB) (dsn, prefix string) {
	t.Helper()
	prefix = Prefix(t)
	return dsnWithPrefix(prefix), prefix
}

// dsnWithPrefix returns the test server's DSN with the table prefix set.
func dsnWithPrefix(prefix string) string {
	sep := "?"
	if strings.Contains(baseDSN, "?") {
		sep = "&"
	}
	return baseDSN + sep + "prefix=" + prefix
}

// BaseDSN returns the test server's go-sql-driver DSN without a table
// prefix, or skips (fails under CI=true) when the server is unreachable.
// Code that makes its own prefixes (the bench harness) starts from it.
func BaseDSN(t testing.TB) string {
	t.Helper()
	Admin(t)
	return baseDSN
}

// Tables returns the names of the tables in the current database whose
// name starts with prefix, in name order.
func Tables(db *sql.DB, prefix string) ([]string, error) {
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME",
		strings.ReplaceAll(prefix, "_", `\_`)+"%")
	if err != nil {
		return nil, fmt.Errorf("testdb: list tables of %s: %w", prefix, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("testdb: list tables of %s: %w", prefix, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("testdb: list tables of %s: %w", prefix, err)
	}
	return names, nil
}

// DropTables drops every table whose name starts with prefix.
func DropTables(db *sql.DB, prefix string) error {
	names, err := Tables(db, prefix)
	if err != nil || len(names) == 0 {
		return err
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	if _, err := db.Exec("DROP TABLE IF EXISTS " + strings.Join(quoted, ", ")); err != nil {
		return fmt.Errorf("testdb: drop tables of %s: %w", prefix, err)
	}
	return nil
}

// Drop drops every table whose name starts with prefix, and fails t when
// that does not work.
func Drop(t testing.TB, db *sql.DB, prefix string) {
	t.Helper()
	if err := DropTables(db, prefix); err != nil {
		t.Error(err)
	}
}
