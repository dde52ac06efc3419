package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
)

// minCeilingEnv is an Env that measures the raw ceiling on a minimal
// table as well (MySQL only: SQLite has no twin of it).
type minCeilingEnv interface {
	RawMinCeiling(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error)
}

// minCeilingConns are the connection counts of the minimal-table
// ceilings bench runs: raw-sql-min-ceiling-1c and raw-sql-min-ceiling-4c.
var minCeilingConns = []int{1, 4}

// minCeilingTable is the minimal table's name after the store's prefix:
// Fresh's cleanup drops it with the prefix's other tables if the run
// itself could not.
const minCeilingTable = "bench_min_jobs"

// minCeilingDDL creates the minimal table (%s is its name): only the
// columns a claim reads and writes, and only the claim's index, in the
// claim's order, as idx_go_claim is on Queuety's table.
const minCeilingDDL = "CREATE TABLE %s (" +
	"id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, " +
	"queue VARCHAR(64) NOT NULL, " +
	"status ENUM('pending','processing','completed') NOT NULL DEFAULT 'pending', " +
	"priority TINYINT NOT NULL DEFAULT 0, " +
	"attempts TINYINT UNSIGNED NOT NULL DEFAULT 0, " +
	"available_at DATETIME NOT NULL, " +
	"reserved_at DATETIME NULL, " +
	"completed_at DATETIME NULL, " +
	"KEY idx_claim (queue, status, priority DESC, available_at, id)" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

// RawMinCeiling is RawCeiling on a table of its own that holds only what
// a claim needs (id, queue, status, priority, attempts, available_at,
// reserved_at, completed_at) with only the claim's index: the same
// batched SKIP LOCKED claim, UPDATE ... IN and completion UPDATE, on rows
// with none of Queuety's other columns and none of its other secondary
// indexes to maintain. The table is created next to the store's (its
// prefix), seeded untimed, and dropped after the run. Queuety's table
// has to carry what PHP reads and indexes; the distance between this
// ceiling and RawCeiling is what that costs on this server.
func (e *MySQLEnv) RawMinCeiling(ctx context.Context, c *queuety.Client, dsn string, jobs, conns int) (float64, error) {
	table := "`" + clientseam.StoreOf(c).Info().Prefix + minCeilingTable + "`"
	db, err := rawConns(dsn, conns)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, fmt.Sprintf(minCeilingDDL, table)); err != nil {
		return 0, fmt.Errorf("create the minimal table: %w", err)
	}
	defer func() { _, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+table) }()
	if err := seedMin(ctx, db, table, jobs); err != nil {
		return 0, err
	}
	sel := "SELECT id, attempts FROM " + table + " FORCE INDEX (idx_claim) WHERE queue = 'default' AND status = 'pending' " +
		"AND available_at <= ? ORDER BY priority DESC, available_at, id LIMIT 100 FOR UPDATE SKIP LOCKED"
	return drainRaw(ctx, db, jobs, conns, rawDrain{
		claim: func(ctx context.Context, tx *sql.Tx) ([]string, []string, error) {
			return claimMin(ctx, tx, sel)
		},
		mark: "UPDATE " + table + " FORCE INDEX (PRIMARY) SET status = 'processing', reserved_at = ?, attempts = attempts + 1 WHERE id IN (%s) AND status = 'pending'",
		complete: func(ctx context.Context, db *sql.DB, in string, _, _ []string) error {
			_, err := db.ExecContext(ctx, "UPDATE "+table+" FORCE INDEX (PRIMARY) SET status = 'completed', completed_at = ? WHERE id IN ("+in+") AND status = 'processing'",
				time.Now().UTC())
			return err
		},
	})
}

// seedMin inserts jobs pending rows into the minimal table, 1,000 a
// statement, due a second ago.
func seedMin(ctx context.Context, db *sql.DB, table string, jobs int) error {
	due := "'" + time.Now().UTC().Add(-time.Second).Format(time.DateTime) + "'"
	for i := 0; i < jobs; i += 1000 {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " (queue, available_at) VALUES ")
		for j := i; j < min(i+1000, jobs); j++ {
			if j > i {
				b.WriteString(", ")
			}
			b.WriteString("('default', " + due + ")")
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("seed the minimal table: %w", err)
		}
	}
	return nil
}

// claimMin locks and reads a batch of the minimal table.
func claimMin(ctx context.Context, tx *sql.Tx, sel string) (ids, attempts []string, err error) {
	rows, err := tx.QueryContext(ctx, sel, time.Now().UTC())
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, attempt int64
		if err := rows.Scan(&id, &attempt); err != nil {
			return nil, nil, err
		}
		ids = append(ids, fmt.Sprint(id))
		attempts = append(attempts, fmt.Sprint(attempt+1))
	}
	return ids, attempts, rows.Err()
}
