package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// WorkflowEndMark implements driver.Tx.
func (t *txn) WorkflowEndMark(ctx context.Context, workflowID int64, runtime string, at time.Time) (bool, error) {
	var one int
	err := t.tx.QueryRowContext(ctx, "SELECT 1 FROM "+t.s.T.WorkflowEnds+" WHERE workflow_id = ?", workflowID).Scan(&one)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("read workflow end mark: %w", err)
	}
	if err := t.mayConflict(ctx, func() error {
		_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.WorkflowEnds+" (workflow_id, runtime, created_at) VALUES (?, ?, ?)",
			workflowID, runtime, t.frac(at))
		return err
	}); err != nil {
		if t.s.D.Duplicate(err) {
			return false, nil
		}
		return false, fmt.Errorf("mark workflow end: %w", err)
	}
	return true, nil
}

// WorkflowEndUnmark implements driver.Tx.
func (t *txn) WorkflowEndUnmark(ctx context.Context, workflowID int64) error {
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.WorkflowEnds+" WHERE workflow_id = ?", workflowID); err != nil {
		return fmt.Errorf("unmark workflow end: %w", err)
	}
	return nil
}

// WorkflowFindEndedElsewhere implements driver.Tx. The failed and the
// cancelled ones are read through the (status, failed_at) and (status,
// completed_at) indexes.
func (t *txn) WorkflowFindEndedElsewhere(ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
	var out []*driver.Workflow
	for _, c := range []struct{ status, col string }{{"failed", "failed_at"}, {"cancelled", "completed_at"}} {
		q := "SELECT " + workflowCols + " FROM " + t.s.T.Workflows + " w WHERE status = '" + c.status + "' AND " + c.col + " >= ?" +
			" AND NOT EXISTS (SELECT 1 FROM " + t.s.T.WorkflowEnds + " e WHERE e.workflow_id = w.id)"
		args := []any{t.sec(p.Since)}
		if len(p.Exclude) > 0 {
			q += " AND id NOT IN (" + placeholders(len(p.Exclude)) + ")"
			args = append(args, idArgs(p.Exclude)...)
		}
		rows, err := t.queryWorkflows(ctx, q+" ORDER BY id LIMIT ?"+t.lock(p.Lock), append(args, p.Limit)...)
		if err != nil {
			return nil, fmt.Errorf("find workflows ended elsewhere: %w", err)
		}
		out = append(out, rows...)
	}
	return mergeByID(nil, out, func(w *driver.Workflow) int64 { return w.ID }, p.Limit), nil
}
