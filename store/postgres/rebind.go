package postgres

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// The SQL the stores share (internal/sqlstore) marks its parameters with
// '?', as MySQL and SQLite do; PostgreSQL numbers them ($1, $2, ...).
// The store's connections number them on the way to pgx, so the shared
// SQL runs unchanged.

// rebind returns q with each '?' outside quoted strings, quoted
// identifiers and comments replaced by $1, $2, ... in order.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			// A doubled quote inside ends and restarts the run: the
			// text between is copied as it is either way.
			j := strings.IndexByte(q[i+1:], c)
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+2])
			i += j + 1
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+1])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+4])
			i += j + 3
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// rebinds caches rebind's results: a store runs the same few hundred
// statements over and over.
type rebinds struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxRebinds bounds the cache; statements past it are rebound each time.
const maxRebinds = 4096

func (r *rebinds) get(q string) string {
	r.mu.RLock()
	out, ok := r.m[q]
	r.mu.RUnlock()
	if ok {
		return out
	}
	out = rebind(q)
	r.mu.Lock()
	if len(r.m) < maxRebinds {
		r.m[q] = out
	}
	r.mu.Unlock()
	return out
}

// connector opens pgx connections that number '?' parameters.
type connector struct {
	base driver.Connector
	rb   *rebinds
}

func newConnector(base driver.Connector) *connector {
	return &connector{base: base, rb: &rebinds{m: map[string]string{}}}
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: dc.(*stdlib.Conn), rb: c.rb}, nil
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

// conn is a pgx connection whose statements are rebound. It has every
// optional interface of *stdlib.Conn that database/sql looks for.
type conn struct {
	*stdlib.Conn
	rb *rebinds
}

func (c *conn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(c.rb.get(q)) }

func (c *conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, c.rb.get(q))
}

func (c *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, c.rb.get(q), args)
}

func (c *conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, c.rb.get(q), args)
}
