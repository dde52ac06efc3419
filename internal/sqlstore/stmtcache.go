package sqlstore

import (
	"context"
	"database/sql"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// stmtCache keeps the statements of the hot paths (the claim, the
// completion, the log rows) prepared, for a dialect that asks for it
// (Dialect.PrepareHot). SQLite parses and plans every statement it is
// handed, and a batch's statements are long: a hundred log rows are a
// statement of 1,400 parameters.
//
// A statement is prepared on the pool, outside any transaction: SQLite's
// pool has one connection, which a transaction holds. So a statement
// first met in a transaction runs unprepared there and is prepared before
// the store's next transaction begins. The cache holds at most
// stmtCacheMax statements; the hot paths keep their number of shapes
// small by padding id lists and splitting row lists to powers of two
// (inIDs, chunks).
type stmtCache struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool // met in a transaction, to prepare before the next
	failed map[string]bool // did not prepare: left unprepared
}

// stmtCacheMax bounds the prepared statements a store keeps.
const stmtCacheMax = 64

func newStmtCache() *stmtCache {
	return &stmtCache{stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{}, failed: map[string]bool{}}
}

// get returns q's prepared statement, or nil after noting that q is
// wanted.
func (c *stmtCache) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[q]; st != nil {
		return st
	}
	if !c.failed[q] && len(c.stmts)+len(c.wanted) < stmtCacheMax {
		c.wanted[q] = true
	}
	return nil
}

// prepareWanted prepares the wanted statements on db. The store calls it
// before it begins a transaction. Preparing waits for a connection, which
// another goroutine's transaction may hold while it looks up statements,
// so the lock is not held meanwhile.
func (c *stmtCache) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	var qs []string
	for q := range c.wanted {
		qs = append(qs, q)
		delete(c.wanted, q)
	}
	c.mu.Unlock()
	for _, q := range qs {
		st, err := db.PrepareContext(ctx, q)
		c.mu.Lock()
		switch {
		case err == nil && c.stmts[q] == nil:
			c.stmts[q] = st
		case err == nil:
			st.Close() // prepared meanwhile by another transaction's caller
		case ctx.Err() == nil:
			c.failed[q] = true
		}
		c.mu.Unlock()
	}
}

// hasWanted reports whether some statement waits to be prepared.
func (c *stmtCache) hasWanted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.wanted) > 0
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}

// execHot runs a statement of the hot paths: through its prepared
// statement where the store keeps them.
func (t *txn) execHot(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if t.s.stmts != nil {
		if st := t.s.stmts.get(q); st != nil {
			return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
	}
	return t.tx.ExecContext(ctx, q, args...)
}

// queryHot is execHot for a query.
func (t *txn) queryHot(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if t.s.stmts != nil {
		if st := t.s.stmts.get(q); st != nil {
			return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		}
	}
	return t.tx.QueryContext(ctx, q, args...)
}

// inIDs returns the placeholders and arguments of "id IN (...)" for ids.
// A store that keeps statements prepared gets the list padded to a power
// of two with copies of the last id, which select no other row, so a
// few statements serve every batch size.
func (t *txn) inIDs(ids []int64) (string, []any) {
	args := idArgs(ids)
	if t.s.stmts != nil && len(ids) > 0 {
		n := 1 << bits.Len(uint(len(ids)-1))
		args = slices.Grow(args, n-len(args))
		for last := args[len(args)-1]; len(args) < n; {
			args = append(args, last)
		}
	}
	return placeholders(len(args)), args
}

// chunks returns the sizes in which n rows are inserted: all at once (up
// to maxInsertRows a statement), or, on a store that keeps statements
// prepared, in powers of two of at most 128, largest first.
func (t *txn) chunks(n int) []int {
	if n == 0 {
		return []int{0}
	}
	if t.s.stmts == nil {
		var out []int
		for ; n > maxInsertRows; n -= maxInsertRows {
			out = append(out, maxInsertRows)
		}
		return append(out, n)
	}
	var out []int
	for n > 0 {
		k := min(1<<(bits.Len(uint(n))-1), 128)
		out = append(out, k)
		n -= k
	}
	return out
}

// rowsSQL is "(?, ...), ..." for n rows of cols columns.
func rowsSQL(n, cols int) string { return joinRows("("+placeholders(cols)+")", n) }

// joinRows is row repeated n times, comma-separated.
func joinRows(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+",", n), ",")
}

// insertTexts keeps the text of multi-row INSERT statements by head, row
// shape and row count, so a batch does not build and hash a new statement
// of a hundred rows each time it writes one.
type insertTexts struct {
	mu    sync.Mutex
	texts map[insertShape]string
}

type insertShape struct {
	head, row string
	rows      int
}

// insertTextsMax bounds the texts kept; past it, texts are built each time.
const insertTextsMax = 64

// get returns "<head><row>,<row>,..." with rows rows.
func (c *insertTexts) get(head, row string, rows int) string {
	key := insertShape{head, row, rows}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.texts[key]; ok {
		return q
	}
	q := head + joinRows(row, rows)
	if c.texts == nil {
		c.texts = map[insertShape]string{}
	}
	if len(c.texts) < insertTextsMax {
		c.texts[key] = q
	}
	return q
}
