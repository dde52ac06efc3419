package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// jobColsWithoutPayload is jobCols with NULL in place of the payload and
// the heartbeat data, for lists that show neither.
var jobColsWithoutPayload = strings.NewReplacer(" payload,", " NULL,", " heartbeat_data,", " NULL,").Replace(jobCols)

// workflowColsWithoutState is workflowCols with NULL in place of the state.
var workflowColsWithoutState = strings.Replace(workflowCols, " state,", " NULL,", 1)

// charLength is the SQL function that counts the characters of a text
// value (SQLite's LENGTH counts characters of text, bytes of a blob).
func (s *Store) charLength() string {
	if s.D.Name == "sqlite" {
		return "LENGTH"
	}
	return "CHAR_LENGTH"
}

// JobOldestDueByQueue implements driver.Tx.
func (t *txn) JobOldestDueByQueue(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := t.tx.QueryContext(ctx, t.s.SQL.OldestDueByQueue, t.sec(now))
	if err != nil {
		return nil, fmt.Errorf("oldest due job per queue: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var q string
		var due time.Time
		if err := rows.Scan(&q, nullTime{&due}); err != nil {
			return nil, fmt.Errorf("oldest due job per queue: %w", err)
		}
		if !due.IsZero() {
			out[q] = due
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oldest due job per queue: %w", err)
	}
	return out, nil
}

// JobPreview implements driver.Tx.
func (t *txn) JobPreview(ctx context.Context, id int64, maxChars int) (*driver.JobPreview, error) {
	if maxChars < 0 {
		maxChars = 0
	}
	cut := func(col string) string { return fmt.Sprintf(" SUBSTR(%s, 1, %d),", col, maxChars) }
	cols := strings.NewReplacer(" payload,", cut("payload"), " heartbeat_data,", cut("heartbeat_data")).Replace(jobCols)
	n := t.s.charLength()
	q := "SELECT " + cols + ", " + n + "(payload), " + n + "(heartbeat_data) FROM " + t.s.T.Jobs + t.s.D.ByID + " WHERE id = ?"
	p := &driver.JobPreview{}
	sc := newJobScanner()
	sc.dests = append(sc.dests, nullInt{&p.PayloadLen}, nullInt{&p.HeartbeatLen})
	j, err := sc.scan(t.tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	p.Job = j
	return p, nil
}

// TextRead implements driver.Tx.
func (t *txn) TextRead(ctx context.Context, col driver.TextColumn, id, from, n int64) ([]byte, int64, error) {
	var table, column, what string
	switch col {
	case driver.JobPayload:
		table, column, what = t.s.T.Jobs, "payload", "job"
	case driver.JobHeartbeatData:
		table, column, what = t.s.T.Jobs, "heartbeat_data", "job"
	case driver.WorkflowState:
		table, column, what = t.s.T.Workflows, "state", "workflow"
	default:
		return nil, 0, fmt.Errorf("read text: unknown column %d: %w", col, driver.ErrInvalidArgument)
	}
	if from < 0 || n < 0 {
		return nil, 0, fmt.Errorf("read text: negative range %d+%d: %w", from, n, driver.ErrInvalidArgument)
	}
	q := "SELECT SUBSTR(" + column + ", ?, ?), " + t.s.charLength() + "(" + column + ") FROM " + table + t.s.D.ByID + " WHERE id = ?"
	var b []byte
	var total sql.NullInt64
	err := t.tx.QueryRowContext(ctx, q, from+1, n, id).Scan(nullBytes{&b}, &total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("%s %d: %w", what, id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s of %s %d: %w", column, what, id, err)
	}
	if !total.Valid {
		return nil, -1, nil
	}
	return b, total.Int64, nil
}
