package bench

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/postgres"
)

// CeilingConns is how many connections the PostgreSQL raw ceiling drains
// with (raw-sql-ceiling-4c), as on MySQL.
func (e *PostgresEnv) CeilingConns() int { return 4 }

// RawCeiling implements ceilingEnv on PostgreSQL: the hand-written
// batched drain of raw-sql-ceiling-4c on the store's own jobs table and
// claim index (pending jobs by queue, priority, due time and id), 100
// rows a claim with FOR UPDATE SKIP LOCKED, marked processing in the
// claim's transaction and completed by one statement: the most any queue
// does with these tables on this server.
func (e *PostgresEnv) RawCeiling(ctx context.Context, c *queuety.Client, _ string, jobs, conns int) (float64, error) {
	if err := dispatchAll(ctx, c, noopRequests(jobs)); err != nil {
		return 0, err
	}
	st, ok := clientseam.StoreOf(c).(*postgres.Store)
	if !ok {
		return 0, errors.New("bench: raw ceiling: the client's store is not PostgreSQL")
	}
	table := st.Info().Prefix + "queuety_jobs"
	sel := "SELECT id, handler, payload, attempts FROM " + table + " WHERE queue = 'default' AND status = 'pending' AND available_at <= ? " +
		"ORDER BY priority DESC, available_at, id LIMIT 100 FOR UPDATE SKIP LOCKED"
	return drainRaw(ctx, st.DB, jobs, conns, rawDrain{
		claim: func(ctx context.Context, tx *sql.Tx) ([]string, []string, error) {
			return claimRaw(ctx, tx, table, sel, false)
		},
		mark: "UPDATE " + table + " SET status = 'processing', reserved_at = ?, attempts = attempts + 1 WHERE id IN (%s) AND status = 'pending'",
		complete: func(ctx context.Context, db *sql.DB, in string, _, _ []string) error {
			_, err := db.ExecContext(ctx, "UPDATE "+table+" SET status = 'completed', completed_at = ? WHERE id IN ("+in+") AND status = 'processing'",
				time.Now().UTC())
			return err
		},
	})
}
