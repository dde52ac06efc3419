package sqlstore

// This file holds the per-queue reads (job counts, the oldest due job) and
// the queue pause state.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// JobCounts implements driver.Tx.
func (t *txn) JobCounts(ctx context.Context) ([]driver.QueueCount, error) {
	return t.queueCounts(ctx, "")
}

// queueCounts counts jobs by queue and status, filtered by where ("" or
// " WHERE ..." with its args).
func (t *txn) queueCounts(ctx context.Context, where string, args ...any) ([]driver.QueueCount, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT queue, status, COUNT(*) FROM "+t.s.T.Jobs+where+" GROUP BY queue, status ORDER BY queue, status", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QueueCount
	for rows.Next() {
		var c driver.QueueCount
		var s string
		if err := rows.Scan(&c.Queue, &s, &c.Count); err != nil {
			return nil, err
		}
		c.Status = driver.JobStatus(s)
		out = append(out, c)
	}
	return out, rows.Err()
}

// JobOldestDue implements driver.Tx.
func (t *txn) JobOldestDue(ctx context.Context, queue string, now time.Time) (time.Time, error) {
	var due time.Time
	err := t.tx.QueryRowContext(ctx, t.s.SQL.OldestDue, queue, t.sec(now)).Scan(nullTime{&due})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest due job: %w", err)
	}
	return due, nil
}

// QueueSetPaused implements driver.Tx. Pausing writes a queue_states row
// and resuming deletes it, as Queuety does.
func (t *txn) QueueSetPaused(ctx context.Context, queue string, paused bool, at time.Time) error {
	if !paused {
		_, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.QueueStates+" WHERE queue = ?", queue)
		return err
	}
	res, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.QueueStates+" SET paused = 1, paused_at = ? WHERE queue = ?", t.sec(at), queue)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 { // matched rows: see Dialect
		return err
	}
	err = t.mayConflict(ctx, func() error {
		_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.QueueStates+" (queue, paused, paused_at) VALUES (?, 1, ?)", queue, t.sec(at))
		return err
	})
	if err != nil && t.s.D.Duplicate(err) {
		return nil
	}
	return err
}

// QueueStates implements driver.Tx.
func (t *txn) QueueStates(ctx context.Context) ([]driver.QueueState, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT queue, paused, paused_at FROM "+t.s.T.QueueStates+" ORDER BY queue")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QueueState
	for rows.Next() {
		var s driver.QueueState
		var paused int
		if err := rows.Scan(&s.Queue, &paused, nullTime{&s.PausedAt}); err != nil {
			return nil, err
		}
		s.Paused = paused != 0
		out = append(out, s)
	}
	return out, rows.Err()
}
