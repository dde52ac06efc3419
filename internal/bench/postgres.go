package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/postgres"
)

// PostgresEnv runs each benchmark in a fresh schema of one PostgreSQL
// database, dropped afterwards.
type PostgresEnv struct{ base string }

// Fresh implements Env: it creates a schema in the base DSN's database
// (which must exist) and returns the base DSN with schema set to it.
func (e *PostgresEnv) Fresh(ctx context.Context) (string, func(), error) {
	schema := "qb" + RandomSuffix()
	head, q, err := e.split()
	if err != nil {
		return "", nil, err
	}
	admin, err := driver.Open(ctx, head+"?"+q.Encode())
	if err != nil {
		return "", nil, err
	}
	db := admin.(*postgres.Store).DB
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("bench: create schema %s: %w", schema, err)
	}
	q.Set("schema", schema)
	cleanup := func() {
		defer admin.Close()
		_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	}
	return head + "?" + q.Encode(), cleanup, nil
}

// split returns the base DSN without its parameters, and its parameters
// without schema and create.
func (e *PostgresEnv) split() (string, url.Values, error) {
	head, rawQuery := e.base, ""
	at := strings.LastIndexByte(e.base, '@')
	if i := strings.IndexByte(e.base[at+1:], '?'); i >= 0 {
		head, rawQuery = e.base[:at+1+i], e.base[at+2+i:]
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", nil, fmt.Errorf("bench: DSN parameters: %w", err)
	}
	q.Del("schema")
	q.Del("create")
	return head, q, nil
}

// ServerCPU implements serverCPUEnv: when the server runs on this machine
// (the process serving a connection of ours is a postgres process here),
// the CPU time of every postgres process, as the River peer measures it.
func (e *PostgresEnv) ServerCPU(ctx context.Context) serverCPU {
	head, q, err := e.split()
	if err != nil {
		return nil
	}
	admin, err := driver.Open(ctx, head+"?"+q.Encode())
	if err != nil {
		return nil
	}
	defer admin.Close()
	var pid int
	if err := admin.(*postgres.Store).DB.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil || pid <= 0 {
		return nil
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return nil
	}
	return func() cpuTimes { return processesCPU("postgres") }
}
