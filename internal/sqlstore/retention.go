package sqlstore

// This file holds the queries of the retention cleaner: which finished
// jobs and workflows it may delete, and its bounded deletes. The searches
// read without locks and walk an index in the order they return rows, so
// a batch costs about its own size; the deletes go by primary key and
// check their conditions again, so they lock only the rows they delete.

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// finishedWorkflow is the SQL list of the statuses of a finished workflow.
const finishedWorkflow = "('completed', 'failed', 'cancelled')"

// retiredAt is the column that says when a job in status finished.
func retiredAt(status driver.JobStatus) string {
	if status == driver.JobCompleted {
		return "completed_at"
	}
	return "failed_at"
}

// onlyIDs is the condition and arguments that limit a search to ids (none
// when ids is nil).
func onlyIDs(col string, ids []int64) (string, []any) {
	if ids == nil {
		return "", nil
	}
	if len(ids) == 0 {
		return " AND 1 = 0", nil
	}
	return " AND " + col + " IN (" + placeholders(len(ids)) + ")", idArgs(ids)
}

// JobRetirable implements driver.Tx.
func (t *txn) JobRetirable(ctx context.Context, status driver.JobStatus, p driver.RetireParams) ([]int64, error) {
	T, at := t.s.T, retiredAt(status)
	only, args := onlyIDs("j.id", p.Only)
	q := "SELECT j.id FROM " + T.Jobs + " j WHERE j.status = ? AND j." + at + " < ?" + only +
		" AND (j.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM " + T.Workflows + " w WHERE w.id = j.workflow_id" +
		" AND w.status NOT IN " + finishedWorkflow + "))" +
		" AND NOT EXISTS (SELECT 1 FROM " + T.Jobs + " d WHERE d.depends_on = j.id AND d.status <> 'completed')" +
		" ORDER BY j." + at + ", j.id LIMIT ?"
	args = append(append([]any{string(status), t.sec(p.Before)}, args...), p.Limit)
	ids, err := queryAll(ctx, t.tx, func(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find %s jobs to retire: %w", status, err)
	}
	return ids, nil
}

// JobDeleteRetired implements driver.Tx.
func (t *txn) JobDeleteRetired(ctx context.Context, ids []int64, status driver.JobStatus, before time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := "DELETE FROM " + t.s.T.Jobs + " WHERE id IN (" + placeholders(len(ids)) + ") AND status = ? AND " + retiredAt(status) + " < ?"
	res, err := t.tx.ExecContext(ctx, q, append(idArgs(ids), string(status), t.sec(before))...)
	if err != nil {
		return 0, fmt.Errorf("delete retired %s jobs: %w", status, err)
	}
	return res.RowsAffected()
}

// WorkflowRetirable implements driver.Tx.
func (t *txn) WorkflowRetirable(ctx context.Context, p driver.RetireParams) ([]int64, error) {
	T := t.s.T
	only, args := onlyIDs("w.id", p.Only)
	q := "SELECT w.id FROM " + T.Workflows + " w WHERE w.status IN " + finishedWorkflow +
		" AND COALESCE(w.completed_at, w.failed_at) < ?" + only +
		" AND (w.parent_workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM " + T.Workflows + " p WHERE p.id = w.parent_workflow_id" +
		" AND p.status NOT IN " + finishedWorkflow + "))" +
		" AND NOT EXISTS (SELECT 1 FROM " + T.Dependencies + " d JOIN " + T.Workflows + " x ON x.id = d.waiting_workflow_id" +
		" WHERE d.dependency_workflow_id = w.id AND x.status NOT IN " + finishedWorkflow + ")" +
		" ORDER BY w.id LIMIT ?"
	args = append(append([]any{t.sec(p.Before)}, args...), p.Limit)
	ids, err := queryAll(ctx, t.tx, func(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find finished workflows to retire: %w", err)
	}
	return ids, nil
}

// LogDeleteRetired implements driver.Tx: it reads the ids through the
// created_at index, then deletes them by primary key.
func (t *txn) LogDeleteRetired(ctx context.Context, before time.Time, limit int) (int64, error) {
	q := "SELECT id FROM " + t.s.T.Logs + " WHERE created_at < ? ORDER BY created_at, id LIMIT ?"
	ids, err := queryAll(ctx, t.tx, func(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }, q, t.sec(before), limit)
	if err != nil {
		return 0, fmt.Errorf("find logs to retire: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Logs+" WHERE id IN ("+placeholders(len(ids))+")", idArgs(ids)...)
	if err != nil {
		return 0, fmt.Errorf("delete retired logs: %w", err)
	}
	return res.RowsAffected()
}
