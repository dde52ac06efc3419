package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// LimitsTable names the Go engine's table of limit lock rows (one per
// rate limit, concurrency group and queue budget) for a table prefix.
func LimitsTable(prefix string) string { return NewTables(prefix).Limits }

// RateStartsTable names the Go engine's table of rate-limited starts (one
// row per start of a rate-limited handler) for a table prefix.
func RateStartsTable(prefix string) string { return NewTables(prefix).RateStarts }

// LimitLock implements driver.Tx: an UPDATE locks an existing row; a
// missing one is inserted (a concurrent insert of the same row makes this
// one a duplicate, and the UPDATE then waits for it).
func (t *txn) LimitLock(ctx context.Context, kind, name string, at time.Time) error {
	table := t.s.T.Limits
	upd := "UPDATE " + table + " SET locked_at = ? WHERE kind = ? AND name = ?"
	for range 2 {
		res, err := t.tx.ExecContext(ctx, upd, t.frac(at), kind, name)
		if err != nil {
			return fmt.Errorf("lock limit %s %q: %w", kind, name, err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			return nil
		}
		err = t.mayConflict(ctx, func() error {
			_, err := t.tx.ExecContext(ctx, "INSERT INTO "+table+" (kind, name, locked_at) VALUES (?, ?, ?)", kind, name, t.frac(at))
			return err
		})
		if err == nil {
			return nil
		}
		if !t.s.D.Duplicate(err) {
			return fmt.Errorf("create limit %s %q: %w", kind, name, err)
		}
	}
	return fmt.Errorf("lock limit %s %q: row neither found nor created", kind, name)
}

// RateStartCount implements driver.Tx.
func (t *txn) RateStartCount(ctx context.Context, handler string, since time.Time) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.RateStarts+" WHERE handler = ? AND started_at > ?",
		handler, t.frac(since)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count starts of %q: %w", handler, err)
	}
	return n, nil
}

// RateStartTimes implements driver.Tx.
func (t *txn) RateStartTimes(ctx context.Context, handler string, since time.Time, limit int) ([]time.Time, error) {
	q := "SELECT started_at FROM " + t.s.T.RateStarts + " WHERE handler = ? AND started_at > ? ORDER BY started_at LIMIT ?"
	out, err := queryAll(ctx, t.tx, scanTime, q, handler, t.frac(since), limit)
	if err != nil {
		return nil, fmt.Errorf("read starts of %q: %w", handler, err)
	}
	return out, nil
}

func scanTime(sc scanner) (v time.Time, err error) { return v, sc.Scan(nullTime{&v}) }

// RateStartInsert implements driver.Tx.
func (t *txn) RateStartInsert(ctx context.Context, starts []driver.RateStart) error {
	if len(starts) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.s.T.RateStarts + " (handler, started_at, job_id, attempt) VALUES ")
	args := make([]any, 0, 4*len(starts))
	for i, s := range starts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?, ?, ?)")
		args = append(args, s.Handler, t.frac(s.StartedAt), s.JobID, s.Attempt)
	}
	if _, err := t.tx.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("record starts: %w", err)
	}
	return nil
}

// RateStartDelete implements driver.Tx.
func (t *txn) RateStartDelete(ctx context.Context, handler string, before time.Time, limit int) (int64, error) {
	table := t.s.T.RateStarts
	q := "DELETE FROM " + table + " WHERE id IN (SELECT id FROM (SELECT id FROM " + table +
		" WHERE handler = ? AND started_at <= ? ORDER BY started_at LIMIT ?) AS old)"
	res, err := t.tx.ExecContext(ctx, q, handler, t.frac(before), limit)
	if err != nil {
		return 0, fmt.Errorf("prune starts of %q: %w", handler, err)
	}
	return res.RowsAffected()
}

// RateForeignStarts implements driver.Tx.
func (t *txn) RateForeignStarts(ctx context.Context, handler string, since time.Time, limit int) ([]time.Time, error) {
	q := "SELECT l.created_at FROM " + t.s.T.Logs + " l WHERE l.handler = ? AND l.event = 'started' AND l.created_at >= ?" +
		" AND NOT EXISTS (SELECT 1 FROM " + t.s.T.RateStarts + " g WHERE g.job_id = l.job_id AND g.attempt = l.attempt)" +
		" ORDER BY l.created_at LIMIT ?"
	out, err := queryAll(ctx, t.tx, scanTime, q, handler, t.sec(since), limit)
	if err != nil {
		return nil, fmt.Errorf("read foreign starts of %q: %w", handler, err)
	}
	return out, nil
}

// JobUsage implements driver.Tx. Each query reads an index range per
// group (concurrency_group, status) or queue (queue, status, ...).
func (t *txn) JobUsage(ctx context.Context, groups, queues []string) (driver.Usage, error) {
	u := driver.Usage{Groups: map[string]driver.UsageCount{}, Queues: map[string]driver.UsageCount{}}
	for _, part := range []struct {
		col   string
		names []string
		into  map[string]driver.UsageCount
	}{{"concurrency_group", groups, u.Groups}, {"queue", queues, u.Queues}} {
		if len(part.names) == 0 {
			continue
		}
		q := "SELECT " + part.col + ", COUNT(*), COALESCE(SUM(cost_units), 0) FROM " + t.s.T.Jobs +
			" WHERE " + part.col + " IN (" + placeholders(len(part.names)) + ") AND status = 'processing' GROUP BY " + part.col
		rows, err := t.tx.QueryContext(ctx, q, strArgs(part.names)...)
		if err != nil {
			return u, fmt.Errorf("usage by %s: %w", part.col, err)
		}
		for rows.Next() {
			var name string
			var c driver.UsageCount
			if err := rows.Scan(&name, &c.Jobs, &c.Cost); err != nil {
				rows.Close()
				return u, fmt.Errorf("usage by %s: %w", part.col, err)
			}
			part.into[name] = c
		}
		if err := rows.Close(); err != nil {
			return u, err
		}
		if err := rows.Err(); err != nil {
			return u, fmt.Errorf("usage by %s: %w", part.col, err)
		}
	}
	return u, nil
}

// JobUnclaim implements driver.Tx.
func (t *txn) JobUnclaim(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET status = 'pending', reserved_at = NULL, claim_token = NULL, " +
		"attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END WHERE id IN (" + placeholders(len(ids)) + ") AND " + t.s.D.processingByID()
	if _, err := t.tx.ExecContext(ctx, q, idArgs(ids)...); err != nil {
		return fmt.Errorf("unclaim jobs: %w", err)
	}
	return nil
}

func strArgs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
