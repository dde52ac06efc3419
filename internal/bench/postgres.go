package bench

import (
	"context"
	"fmt"
	"net/url"
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
