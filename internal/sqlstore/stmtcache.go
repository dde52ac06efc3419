package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// stmtCache holds the server-side prepared statements of the hot paths
// (claim, completion, log rows), one *sql.Stmt per SQL text. database/sql
// prepares each on a connection the first time a transaction on that
// connection uses it and reuses it afterwards, so the server parses a
// claim or a completion once per connection rather than once per batch,
// and the values travel in the binary protocol instead of being quoted
// into the text. Only a bounded set of texts reaches it: IN lists are
// padded to a power of two (padIDs) and multi-row inserts are split into
// power-of-two chunks (chunks).
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxCachedStatements bounds the cache; past it, statements run
// unprepared (the shapes are bounded well below it, so this only guards
// against a caller that passes unbounded texts).
const maxCachedStatements = 256

func (c *stmtCache) get(ctx context.Context, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[q]; st != nil {
		return st, nil
	}
	if len(c.m) >= maxCachedStatements {
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[q] = st
	return st, nil
}

// close closes every cached statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// hotExec runs a hot-path statement in the transaction: prepared when the
// dialect prepares them, as text otherwise.
func (t *txn) hotExec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st, err := t.hotStmt(ctx, q); err != nil {
		return nil, err
	} else if st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, q, args...)
}

// hotQuery is hotExec for a query.
func (t *txn) hotQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st, err := t.hotStmt(ctx, q); err != nil {
		return nil, err
	} else if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

// hotStmt returns the transaction's handle on the prepared statement q, or
// nil when statements are not prepared.
func (t *txn) hotStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if !t.s.D.PrepareHot {
		return nil, nil
	}
	st, err := t.s.stmts.get(ctx, q)
	if err != nil || st == nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st), nil
}

// padIDs returns the IN-list arguments for ids padded, by repeating the
// last id, to the next power of two (at least 1), so that an IN list has
// one of a few shapes; a repeated id matches its row once. Lists longer
// than maxPadded keep their length.
func padIDs(ids []int64) []any {
	n := len(ids)
	if n > 0 && n <= maxPadded {
		n = 1 << bitsFor(n)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = ids[min(i, len(ids)-1)]
	}
	return out
}

// maxPadded is the longest IN list padIDs pads.
const maxPadded = 1024

// maxChunk is the most rows one chunk of a multi-row insert holds.
const maxChunk = 256

// bitsFor returns the smallest b with 1<<b >= n (n >= 1).
func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// chunks splits n rows into power-of-two chunk sizes, largest first (at
// most maxChunk each), so multi-row inserts take a few shapes.
func chunks(n int) []int {
	var out []int
	for n > 0 {
		c := maxChunk
		for c > n {
			c >>= 1
		}
		out = append(out, c)
		n -= c
	}
	return out
}

// valuesList returns "(?,...,?),(?,...,?)" for rows of cols columns.
func valuesList(rows, cols int) string {
	row := "(" + placeholders(cols) + ")"
	return strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
}
