package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

const batchCols = "id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options, cancelled_at, created_at, finished_at"

func scanBatch(sc scanner) (*driver.Batch, error) {
	b := &driver.Batch{}
	var total, pending, failed int64
	err := sc.Scan(&b.ID, nullString{&b.Name}, &total, &pending, &failed, nullBytes{&b.FailedJobIDs}, nullBytes{&b.Options},
		nullTime{&b.CancelledAt}, nullTime{&b.CreatedAt}, nullTime{&b.FinishedAt})
	if err != nil {
		return nil, fmt.Errorf("scan batch: %w", err)
	}
	b.TotalJobs, b.PendingJobs, b.FailedJobs = int(total), int(pending), int(failed)
	return b, nil
}

func (t *txn) queryBatches(ctx context.Context, q string, args ...any) ([]*driver.Batch, error) {
	return queryAll(ctx, t.tx, scanBatch, q, args...)
}

// BatchInsert implements driver.Tx.
func (t *txn) BatchInsert(ctx context.Context, b *driver.Batch) error {
	q := "INSERT INTO " + t.s.T.Batches + " (name, total_jobs, pending_jobs, failed_jobs, failed_job_ids, options, cancelled_at, " +
		"created_at, finished_at) VALUES (" + placeholders(9) + ")"
	ids, err := t.insert(ctx, q, 1, nullStr(b.Name), b.TotalJobs, b.PendingJobs, b.FailedJobs, string(b.FailedJobIDs),
		string(b.Options), t.sec(b.CancelledAt), t.sec(b.CreatedAt), t.sec(b.FinishedAt))
	if err != nil {
		return fmt.Errorf("insert batch: %w", err)
	}
	b.ID = ids[0]
	return nil
}

// BatchGet implements driver.Tx.
func (t *txn) BatchGet(ctx context.Context, id int64, lock driver.LockMode) (*driver.Batch, error) {
	return queryOne(ctx, t.tx, scanBatch, "batch", id, "SELECT "+batchCols+" FROM "+t.s.T.Batches+" WHERE id = ?"+t.lock(lock))
}

// BatchGetMany implements driver.Tx.
func (t *txn) BatchGetMany(ctx context.Context, ids []int64, lock driver.LockMode) ([]*driver.Batch, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := "SELECT " + batchCols + " FROM " + t.s.T.Batches + " WHERE id IN (" + placeholders(len(ids)) + ") ORDER BY id" + t.lock(lock)
	return t.queryBatches(ctx, q, idArgs(ids)...)
}

// BatchUpdate implements driver.Tx.
func (t *txn) BatchUpdate(ctx context.Context, b *driver.Batch) error {
	q := "UPDATE " + t.s.T.Batches + " SET pending_jobs = ?, failed_jobs = ?, failed_job_ids = ?, cancelled_at = ?, finished_at = ? WHERE id = ?"
	if _, err := t.tx.ExecContext(ctx, q, b.PendingJobs, b.FailedJobs, string(b.FailedJobIDs), t.sec(b.CancelledAt),
		t.sec(b.FinishedAt), b.ID); err != nil {
		return fmt.Errorf("update batch %d: %w", b.ID, err)
	}
	return nil
}

// BatchList implements driver.Tx.
func (t *txn) BatchList(ctx context.Context, f driver.BatchFilter) ([]*driver.Batch, error) {
	q := "SELECT " + batchCols + " FROM " + t.s.T.Batches + " WHERE 1 = 1"
	var args []any
	if f.Unfinished {
		q += " AND finished_at IS NULL"
	}
	if f.BeforeID > 0 {
		q += " AND id < ?"
		args = append(args, f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += " ORDER BY id DESC LIMIT ?"
	return t.queryBatches(ctx, q, append(args, limit)...)
}

// BatchFindForeign implements driver.Tx: two index reads (finished_at IS
// NULL, and finished_at >= since), each anti-joined with the event rows by
// primary key.
func (t *txn) BatchFindForeign(ctx context.Context, p driver.ExpiredParams) ([]*driver.Batch, error) {
	notIn := ""
	var excl []any
	if len(p.Exclude) > 0 {
		notIn = " AND b.id NOT IN (" + placeholders(len(p.Exclude)) + ")"
		excl = idArgs(p.Exclude)
	}
	noEvent := func(event string) string {
		return " AND NOT EXISTS (SELECT 1 FROM " + t.s.T.BatchEvents + " e WHERE e.batch_id = b.id AND e.event = " + event + ")"
	}
	cols := prefixed("b.", batchCols)
	failing := "SELECT " + cols + " FROM " + t.s.T.Batches + " b WHERE b.finished_at IS NULL AND b.failed_jobs > 0" +
		noEvent("'catch'") + notIn + " ORDER BY b.id LIMIT ?" + t.lock(p.Lock)
	out, err := t.queryBatches(ctx, failing, append(excl, p.Limit)...)
	if err != nil || len(out) >= p.Limit {
		return out, err
	}
	finished := "SELECT " + cols + " FROM " + t.s.T.Batches + " b WHERE b.finished_at >= ?" +
		noEvent("CASE WHEN b.cancelled_at IS NULL THEN 'finally' ELSE 'cancel' END") + notIn + " ORDER BY b.id LIMIT ?" + t.lock(p.Lock)
	more, err := t.queryBatches(ctx, finished, append(append([]any{t.sec(p.Since)}, excl...), p.Limit-len(out))...)
	return append(out, more...), err
}

// BatchJobCounts implements driver.Tx.
func (t *txn) BatchJobCounts(ctx context.Context, batchID int64) ([]driver.QueueCount, error) {
	return t.queueCounts(ctx, " WHERE batch_id = ?", batchID)
}

// BatchDeleteFinished implements driver.Tx.
func (t *txn) BatchDeleteFinished(ctx context.Context, before time.Time, limit int) (int64, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT id FROM "+t.s.T.Batches+" WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY id LIMIT ?",
		t.sec(before), limit)
	if err != nil {
		return 0, fmt.Errorf("find finished batches: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	in := " IN (" + placeholders(len(ids)) + ")"
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.BatchEvents+" WHERE batch_id"+in, idArgs(ids)...); err != nil {
		return 0, fmt.Errorf("delete batch events: %w", err)
	}
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Batches+" WHERE id"+in, idArgs(ids)...)
	if err != nil {
		return 0, fmt.Errorf("delete batches: %w", err)
	}
	return res.RowsAffected()
}

// BatchEventInsert implements driver.Tx.
func (t *txn) BatchEventInsert(ctx context.Context, events []*driver.BatchEvent) error {
	if len(events) == 0 {
		return nil
	}
	q := "INSERT INTO " + t.s.T.BatchEvents + " (batch_id, event, callback, runtime, job_id, created_at) VALUES "
	args := make([]any, 0, 6*len(events))
	for i, ev := range events {
		if i > 0 {
			q += ", "
		}
		q += "(" + placeholders(6) + ")"
		args = append(args, ev.BatchID, ev.Event, nullStr(ev.Callback), nullStr(ev.Runtime), nullID(ev.JobID), t.frac(ev.CreatedAt))
	}
	if err := t.mayConflict(ctx, func() error { _, err := t.tx.ExecContext(ctx, q, args...); return err }); err != nil {
		if t.s.D.Duplicate(err) {
			return fmt.Errorf("batch event: %w", driver.ErrDuplicate)
		}
		return fmt.Errorf("insert batch events: %w", err)
	}
	return nil
}

// BatchEventList implements driver.Tx.
func (t *txn) BatchEventList(ctx context.Context, batchIDs []int64) ([]*driver.BatchEvent, error) {
	if len(batchIDs) == 0 {
		return nil, nil
	}
	q := "SELECT batch_id, event, callback, runtime, job_id, created_at FROM " + t.s.T.BatchEvents +
		" WHERE batch_id IN (" + placeholders(len(batchIDs)) + ") ORDER BY batch_id, created_at, event"
	return queryAll(ctx, t.tx, func(sc scanner) (*driver.BatchEvent, error) {
		ev := &driver.BatchEvent{}
		if err := sc.Scan(&ev.BatchID, &ev.Event, nullString{&ev.Callback}, nullString{&ev.Runtime}, nullInt{&ev.JobID},
			nullTime{&ev.CreatedAt}); err != nil {
			return nil, fmt.Errorf("scan batch event: %w", err)
		}
		return ev, nil
	}, q, idArgs(batchIDs)...)
}
