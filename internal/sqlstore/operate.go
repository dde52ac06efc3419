package sqlstore

// This file holds the row operations of the operator commands: deleting a
// job, purging logs and reading the per-handler metrics from the logs
// table, in the SQL Queuety PHP runs for them.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// JobDelete implements driver.Tx.
func (t *txn) JobDelete(ctx context.Context, id int64) error {
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Jobs+" WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("job %d: %w", id, driver.ErrNotFound)
	}
	return nil
}

// LogDeleteBefore implements driver.Tx. The rows go in id order, through
// the created_at index.
func (t *txn) LogDeleteBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	q := "DELETE FROM " + t.s.T.Logs + " WHERE id IN (SELECT id FROM (SELECT id FROM " + t.s.T.Logs +
		" WHERE created_at < ? ORDER BY id LIMIT ?) AS old)"
	res, err := t.tx.ExecContext(ctx, q, t.sec(before), limit)
	if err != nil {
		return 0, fmt.Errorf("purge logs: %w", err)
	}
	return res.RowsAffected()
}

// LogHandlerStats implements driver.Tx.
func (t *txn) LogHandlerStats(ctx context.Context, since time.Time) ([]driver.HandlerLogStat, error) {
	q := "SELECT handler, event, COUNT(*), COUNT(duration_ms), AVG(duration_ms) FROM " + t.s.T.Logs +
		" WHERE event IN ('completed', 'failed', 'buried') AND created_at >= ? AND handler != ''" +
		" GROUP BY handler, event ORDER BY handler, event"
	stats, err := queryAll(ctx, t.tx, func(sc scanner) (driver.HandlerLogStat, error) {
		var s driver.HandlerLogStat
		var event string
		var avg sql.NullFloat64
		if err := sc.Scan(&s.Handler, &event, &s.Count, &s.Durations, &avg); err != nil {
			return s, err
		}
		s.Event, s.AvgDurationMS = driver.LogEvent(event), avg.Float64
		return s, nil
	}, q, t.sec(since))
	if err != nil {
		return nil, fmt.Errorf("handler stats: %w", err)
	}
	return stats, nil
}

// LogDurationAt implements driver.Tx.
func (t *txn) LogDurationAt(ctx context.Context, handler string, since time.Time, offset int64) (int64, bool, error) {
	q := "SELECT duration_ms FROM " + t.s.T.Logs +
		" WHERE event = 'completed' AND created_at >= ? AND duration_ms IS NOT NULL AND handler = ?" +
		" ORDER BY duration_ms ASC LIMIT 1 OFFSET ?"
	var d int64
	err := t.tx.QueryRowContext(ctx, q, t.sec(since), handler, offset).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("duration of %s at %d: %w", handler, offset, err)
	}
	return d, true, nil
}
