package sqlstore

// This file holds the log rows: batched inserts and filtered reads.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// LogInsert implements driver.Tx.
func (t *txn) LogInsert(ctx context.Context, entries []*driver.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	// Most batches are plain jobs' 'started' and 'completed' rows: no
	// workflow, no error, no memory, no context. Those are inserted with
	// the empty columns written as NULL in the statement (7 values a row
	// instead of 14); a batch with any other row is inserted whole, in
	// order, with every column.
	plain, full := entries, []*driver.LogEntry(nil)
	for _, l := range entries {
		if l.WorkflowID != 0 || l.StepIndex != nil || l.MemoryPeakKB != nil || l.ErrorMessage != "" ||
			l.ErrorClass != "" || l.ErrorTrace != "" || len(l.Context) != 0 {
			plain, full = nil, entries
			break
		}
	}
	if t.s.D.Arrays {
		return t.logInsertArrays(ctx, entries, plain != nil)
	}
	var box argBoxes
	const head = logColumns
	for _, part := range []struct {
		rows []*driver.LogEntry
		row  string
		cols int
		vals func(args []any, l *driver.LogEntry, q string) []any
	}{
		{plain, "(?,NULL,NULL,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,?)", 7, func(args []any, l *driver.LogEntry, q string) []any {
			return t.plainLogArgs(args, &box, l, q)
		}},
		{full, "(" + placeholders(14) + ")", 14, func(args []any, l *driver.LogEntry, q string) []any {
			return t.fullLogArgs(args, &box, l, q)
		}},
	} {
		rows := part.rows
		if len(rows) == 0 {
			continue
		}
		for _, k := range t.chunks(len(rows)) {
			args := make([]any, 0, k*part.cols)
			for _, l := range rows[:k] {
				q := l.Queue
				if q == "" {
					q = driver.DefaultQueue
				}
				args = part.vals(args, l, q)
			}
			q := t.s.rowsInsert.get("INSERT INTO "+t.s.T.Logs+head, part.row, k)
			if _, err := t.execHot(ctx, q, args...); err != nil {
				return fmt.Errorf("insert logs: %w", err)
			}
			rows = rows[k:]
		}
	}
	return nil
}

// logInsertArrays is LogInsert for a dialect that passes arrays
// (Dialect.Arrays): one statement whatever the rows, of the columns a
// plain job's rows fill when plain is set, else of every column.
func (t *txn) logInsertArrays(ctx context.Context, entries []*driver.LogEntry, plain bool) error {
	head, types := logColumns, logInsertTypes
	if plain {
		head, types = " (job_id, handler, queue, event, attempt, duration_ms, created_at) VALUES ", plainLogInsertTypes
	}
	v := newRowValues(t, "INSERT INTO "+t.s.T.Logs+head, types, len(entries), 0)
	var box argBoxes
	vals := t.fullLogArgs
	if plain {
		vals = t.plainLogArgs
	}
	args := make([]any, 0, len(types))
	for i, l := range entries {
		q := l.Queue
		if q == "" {
			q = driver.DefaultQueue
		}
		v.row(i)
		args = vals(args[:0], &box, l, q)
		for _, a := range args {
			v.arg(a)
		}
	}
	q, args := v.statement()
	if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("insert logs: %w", err)
	}
	return nil
}

// logColumns is the head of LogInsert's INSERT after the table name.
const logColumns = " (job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, " +
	"memory_peak_kb, error_message, error_class, error_trace, context, created_at) VALUES "

// plainLogArgs appends the values of a plain job's log row l, in queue q:
// the columns a plain job's rows fill (plainLogInsertTypes).
func (t *txn) plainLogArgs(args []any, box *argBoxes, l *driver.LogEntry, q string) []any {
	return append(args, nullInt64p(l.JobID), box.str(l.Handler), box.str(q), box.str(string(l.Event)), nullIntp(l.Attempt),
		nullInt64p(l.DurationMS), box.sec(t, l.CreatedAt))
}

// fullLogArgs appends the values of every column of log row l, in queue q
// (logInsertTypes).
func (t *txn) fullLogArgs(args []any, box *argBoxes, l *driver.LogEntry, q string) []any {
	return append(args, nullInt64p(l.JobID), nullID(l.WorkflowID), nullIntp(l.StepIndex), box.str(l.Handler), box.str(q),
		box.str(string(l.Event)), nullIntp(l.Attempt), nullInt64p(l.DurationMS), nullInt64p(l.MemoryPeakKB), nullStr(l.ErrorMessage),
		nullStr(truncate(l.ErrorClass, 255)), nullStr(truncate(l.ErrorTrace, 65000)), nullText(l.Context), box.sec(t, l.CreatedAt))
}

// logInsertTypes are the types of LogInsert's columns (Dialect.Arrays).
var logInsertTypes = []string{"BIGINT", "BIGINT", "SMALLINT", "TEXT", "TEXT", "TEXT", "SMALLINT", "BIGINT",
	"BIGINT", "TEXT", "TEXT", "TEXT", "TEXT", "TIMESTAMP"}

// plainLogInsertTypes are the types of the columns a plain job's log rows
// fill (Dialect.Arrays).
var plainLogInsertTypes = []string{"BIGINT", "TEXT", "TEXT", "TEXT", "SMALLINT", "BIGINT", "TIMESTAMP"}

// argBoxes reuses the argument values of a batch's rows: most rows of a
// batch share their handler, queue, event and second, and each value
// handed to database/sql as an interface is otherwise a new allocation.
type argBoxes struct {
	strs [4]struct {
		s string
		v any
	}
	next  int
	at    time.Time
	atArg any
}

func (b *argBoxes) str(s string) any {
	for i := range b.strs {
		if e := &b.strs[i]; e.v != nil && e.s == s {
			return e.v
		}
	}
	e := &b.strs[b.next]
	b.next = (b.next + 1) % len(b.strs)
	e.s, e.v = s, s
	return e.v
}

func (b *argBoxes) sec(t *txn, at time.Time) any {
	if s := at.Truncate(time.Second); b.atArg == nil || !s.Equal(b.at) {
		b.at, b.atArg = s, t.sec(at)
	}
	return b.atArg
}

// LogList implements driver.Tx.
func (t *txn) LogList(ctx context.Context, f driver.LogFilter) ([]*driver.LogEntry, error) {
	where, args := t.logWhere(f)
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	order := " ORDER BY id LIMIT ?"
	switch {
	case f.Newest:
		order = " ORDER BY id DESC LIMIT ?"
	case f.ByTime:
		order = " ORDER BY created_at, id LIMIT ?"
	}
	cols := logCols
	if n := f.MaxTextBytes; n > 0 {
		cols = cappedLogCols(n)
	}
	return queryAll(ctx, t.tx, scanLog, "SELECT "+cols+" FROM "+t.s.T.Logs+where+order, append(args, limit)...)
}

// logWhere returns the WHERE clause (or "") and arguments of a LogFilter.
func (t *txn) logWhere(f driver.LogFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) { conds, args = append(conds, cond), append(args, v) }
	if f.JobID != 0 {
		add("job_id = ?", f.JobID)
	}
	if len(f.JobIDs) > 0 {
		conds = append(conds, "job_id IN ("+placeholders(len(f.JobIDs))+")")
		args = append(args, idArgs(f.JobIDs)...)
	}
	if f.WorkflowID != 0 {
		add("workflow_id = ?", f.WorkflowID)
	}
	if f.Handler != "" {
		add("handler = ?", f.Handler)
	}
	if f.Event != "" {
		add("event = ?", string(f.Event))
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", t.sec(f.Since))
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
