package sqlstore

// This file holds txn, the driver.Tx of both stores, and the helpers its
// operations share: argument conversions and the row-reading loops. The
// operations are in the files of their rows: jobs.go, claim.go, queues.go,
// logs.go, workflows.go, schedules.go, batches.go and the rest.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// queries holds the statements that do not depend on arguments.
type queries struct {
	jobByID, jobsUpdate, wfByID, wfUpdate string
}

func buildQueries(t Tables, d Dialect) queries {
	return queries{
		jobByID: "SELECT " + jobCols + " FROM " + t.Jobs + d.ByID + " WHERE id = ?",
		jobsUpdate: "UPDATE " + t.Jobs + d.ByID + " SET payload_hash = ?, priority = ?, status = ?, attempts = ?, " +
			"max_attempts = ?, available_at = ?, reserved_at = ?, completed_at = ?, failed_at = ?, error_message = ?, " +
			"workflow_id = ?, step_index = ?, depends_on = ?, heartbeat_data = ?, claim_token = ?, " +
			"schedule_to_start_at = ?, start_to_close_at = ?, schedule_to_close_at = ?, heartbeat_deadline_at = ?, " +
			"last_heartbeat_at = ? WHERE id = ?",
		wfByID: "SELECT " + workflowCols + " FROM " + t.Workflows + " WHERE id = ?",
		wfUpdate: "UPDATE " + t.Workflows + " SET status = ?, state = ?, current_step = ?, total_steps = ?, " +
			"completed_at = ?, failed_at = ?, error_message = ?, deadline_at = ?, run_number = ?, run_started_at = ?, " +
			"run_deadline_at = ?, wait_deadline_at = ? WHERE id = ?",
	}
}

// txn implements driver.Tx.
type txn struct {
	s  *Store
	tx *sql.Tx
}

func (t *txn) lock(m driver.LockMode) string {
	switch m {
	case driver.LockUpdate:
		return t.s.D.ForUpdate
	case driver.LockSkipLocked:
		return t.s.D.SkipLocked
	}
	return ""
}

// sec and frac convert times for second- and microsecond-precision columns.
func (t *txn) sec(v time.Time) any {
	if v.IsZero() {
		return nil
	}
	return t.s.D.Time(v.UTC().Truncate(time.Second), false)
}

func (t *txn) frac(v time.Time) any {
	if v.IsZero() {
		return nil
	}
	return t.s.D.Time(v.UTC(), true)
}

func nullID(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullIntp(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullInt64p(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

func idArgs(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// queryAll runs q and scans every row it returns with scan.
func queryAll[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	return queryAllWith(ctx, tx.QueryContext, scan, q, args...)
}

// queryAllWith is queryAll through query.
func queryAllWith[T any](ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, scanError{err}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// queryOne reads the row a by-id query q returns for id; a missing row is
// driver.ErrNotFound, reported as "<what> <id>".
func queryOne[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), what string, id int64, q string) (T, error) {
	v, err := scan(tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, fmt.Errorf("%s %d: %w", what, id, driver.ErrNotFound)
	}
	return v, err
}

// scanID scans a row of one id.
func scanID(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }

// ids runs a query that returns one id column.
func (t *txn) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	return queryAll(ctx, t.tx, scanID, q, args...)
}

// mergeByID appends the elements of b whose id is not already in a, up to
// limit elements in total.
func mergeByID[T any](a, b []T, id func(T) int64, limit int) []T {
	seen := make(map[int64]bool, len(a))
	for _, v := range a {
		seen[id(v)] = true
	}
	for _, v := range b {
		if len(a) >= limit {
			break
		}
		if !seen[id(v)] {
			seen[id(v)] = true
			a = append(a, v)
		}
	}
	return a
}

// idOf is mergeByID's id for plain ids.
func idOf(id int64) int64 { return id }

func prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// insert runs an INSERT of n rows into a table with an id column and
// returns their ids in the order of its rows: from RETURNING on
// databases without a last insert id (Dialect.Returning), else from the
// result (Dialect.InsertIDs, or the step read around a multi-row insert,
// Dialect.Increment).
func (t *txn) insert(ctx context.Context, q string, n int, args ...any) ([]int64, error) {
	q, args = t.literals(q, args)
	return t.insertWritten(ctx, q, n, args...)
}

// insertWritten is insert for a statement whose literals are written
// already (rowValues).
func (t *txn) insertWritten(ctx context.Context, q string, n int, args ...any) ([]int64, error) {
	if t.s.D.Returning {
		ids, err := t.ids(ctx, q+" RETURNING id", args...)
		if err != nil {
			return nil, err
		}
		if len(ids) != n {
			return nil, fmt.Errorf("the insert returned %d ids for %d rows", len(ids), n)
		}
		return ids, nil
	}
	step, err := t.increment(ctx, n)
	if err != nil {
		return nil, err
	}
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return t.insertIDs(ctx, res, n, step)
}

// mayConflict runs fn, one statement whose unique-key violation the
// caller handles. Where a failed statement aborts the transaction
// (Dialect.AbortsOnError), fn runs under a savepoint, and a failure rolls
// back to it, so the transaction can go on.
func (t *txn) mayConflict(ctx context.Context, fn func() error) error {
	if !t.s.D.AbortsOnError {
		return fn()
	}
	if _, err := t.tx.ExecContext(ctx, "SAVEPOINT queuety_unique"); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(); err != nil {
		if _, rerr := t.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT queuety_unique"); rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back to savepoint: %w", rerr))
		}
		return err
	}
	if _, err := t.tx.ExecContext(ctx, "RELEASE SAVEPOINT queuety_unique"); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}
