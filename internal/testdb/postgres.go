package testdb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DefaultPostgresDSN is the PostgreSQL server used when
// QUEUETY_TEST_POSTGRES is not set.
const DefaultPostgresDSN = "postgres://root@127.0.0.1:5432/test"

var (
	pgOnce    sync.Once
	pgAdmin   *sql.DB
	pgBaseDSN string
	pgOpenErr error
)

func connectPostgres() {
	pgBaseDSN = os.Getenv("QUEUETY_TEST_POSTGRES")
	if pgBaseDSN == "" {
		pgBaseDSN = DefaultPostgresDSN
	}
	u, err := url.Parse(pgBaseDSN)
	if err != nil {
		pgOpenErr = fmt.Errorf("QUEUETY_TEST_POSTGRES is not a postgres:// URL")
		return
	}
	q := u.Query()
	q.Set("connect_timeout", "5")
	u.RawQuery = q.Encode()
	pgAdmin, pgOpenErr = sql.Open("pgx", u.String())
	if pgOpenErr != nil {
		return
	}
	pgAdmin.SetMaxOpenConns(4)
	pgOpenErr = pgAdmin.Ping()
}

// PostgresAdmin returns a handle on the PostgreSQL test server
// (QUEUETY_TEST_POSTGRES, a postgres:// URL, default
// postgres://root@127.0.0.1:5432/test) for direct SQL, with $n
// placeholders. It skips the test when the server is unreachable, and
// fails it instead under CI=true: CI must run the PostgreSQL suite.
func PostgresAdmin(t testing.TB) *sql.DB {
	t.Helper()
	pgOnce.Do(connectPostgres)
	requireServer(t, "PostgreSQL", pgOpenErr)
	return pgAdmin
}

// PostgresDSN returns a DSN for the PostgreSQL test server whose tables
// go to a fresh schema of their own (the DSN's schema parameter), and
// drops that schema with everything in it when the test ends.
func PostgresDSN(t testing.TB) (dsn, schema string) {
	t.Helper()
	db := PostgresAdmin(t)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testdb: random schema: %v", err)
	}
	schema = "t" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("testdb: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE"); err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
		}
	})
	return PostgresBaseDSN(t) + sepFor(pgBaseDSN) + "schema=" + schema, schema
}

// PostgresBaseDSN returns the PostgreSQL test server's DSN without a
// schema, or skips (fails under CI=true) when the server is unreachable.
func PostgresBaseDSN(t testing.TB) string {
	t.Helper()
	PostgresAdmin(t)
	return pgBaseDSN
}

func sepFor(dsn string) string {
	for i := 0; i < len(dsn); i++ {
		if dsn[i] == '?' {
			return "&"
		}
	}
	return "?"
}
