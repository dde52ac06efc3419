package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuety"
	// SQLiteEnv's stores: EnvFor hands out sqlite:// DSNs.
	"github.com/queuety/queuety-go/internal/clientseam"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// CeilingConns is the number of connections of the MySQL raw ceiling
// (raw-sql-ceiling-4c).
func (e *MySQLEnv) CeilingConns() int { return 4 }

// CeilingConns is 1: SQLite has one writer, and the store uses one
// connection (raw-sql-ceiling-1c).
func (SQLiteEnv) CeilingConns() int { return 1 }

// RawCeiling seeds jobs through the engine's client c (untimed), then
// drains them with hand-written SQL on the store's own connection: per
// batch of 100, one immediate transaction with a SELECT in the claim
// index's order and an UPDATE ... IN to processing, then one completion
// UPDATE. No logs, no fencing, no handlers: the most any queue on these
// tables could do with SQLite's single writer. conns is ignored (one).
func (SQLiteEnv) RawCeiling(ctx context.Context, c *queuety.Client, _ string, jobs, _ int) (float64, error) {
	if err := dispatchAll(ctx, c, noopRequests(jobs)); err != nil {
		return 0, err
	}
	db, err := rawDB(c)
	if err != nil {
		return 0, err
	}
	table := clientseam.StoreOf(c).Info().Prefix + "queuety_jobs"
	sel := "SELECT id, handler, payload, attempts FROM " + table + " WHERE queue = 'default' AND status = 'pending' " +
		"AND available_at <= ? ORDER BY priority DESC, available_at, id LIMIT 100"
	sqlTime := func() string { return time.Now().UTC().Format("2006-01-02 15:04:05") }
	done := 0
	meter := meterFrom(ctx)
	meter.start()
	start := time.Now()
	for {
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the store's connection sets _txlock
		if err != nil {
			return 0, err
		}
		rows, err := tx.QueryContext(ctx, sel, sqlTime())
		if err != nil {
			tx.Rollback()
			return 0, err
		}
		var ids []string
		for rows.Next() {
			var id, attempts int64
			var h, p string
			if err := rows.Scan(&id, &h, &p, &attempts); err != nil {
				rows.Close()
				tx.Rollback()
				return 0, err
			}
			ids = append(ids, fmt.Sprint(id))
		}
		rows.Close()
		if len(ids) == 0 {
			tx.Rollback()
			break
		}
		in := strings.Join(ids, ",")
		if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET status = 'processing', reserved_at = ?, attempts = attempts + 1 WHERE id IN ("+in+") AND status = 'pending'", sqlTime()); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		if _, err := db.ExecContext(ctx, "UPDATE "+table+" SET status = 'completed', completed_at = ? WHERE id IN ("+in+") AND status = 'processing'", sqlTime()); err != nil {
			return 0, err
		}
		done += len(ids)
	}
	elapsed := time.Since(start)
	meter.stop(float64(jobs))
	if done != jobs {
		return 0, fmt.Errorf("raw ceiling drained %d of %d jobs", done, jobs)
	}
	return float64(jobs) / elapsed.Seconds(), nil
}
