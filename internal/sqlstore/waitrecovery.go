package sqlstore

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

var _ driver.WaitRecoveryTx = (*txn)(nil)

// WorkflowFindStrandedWaits implements driver.WaitRecoveryTx. The waiting
// workflows are read through the status index, each one's dependency rows
// of its current step through idx_waiting and their workflows by primary
// key; the locking clause locks the waiting workflows only. A dependency
// ended at its failed_at when failed, else at its completed_at.
func (t *txn) WorkflowFindStrandedWaits(ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
	const ended = "CASE WHEN k.status = 'failed' THEN k.failed_at ELSE k.completed_at END"
	q := "SELECT " + workflowCols + " FROM " + t.s.T.Workflows + " w WHERE w.status = 'waiting_for_workflows'" +
		" AND EXISTS (SELECT 1 FROM " + t.s.T.Dependencies + " d JOIN " + t.s.T.Workflows + " k ON k.id = d.dependency_workflow_id" +
		" WHERE d.waiting_workflow_id = w.id AND d.step_index = w.current_step" +
		" AND ((k.status = 'completed' AND d.satisfied_at IS NULL) OR k.status IN ('failed', 'cancelled'))" +
		" AND (" + ended + " IS NULL OR " + ended + " <= ?))"
	args := []any{t.sec(p.Now)}
	if len(p.Exclude) > 0 {
		q += " AND w.id NOT IN (" + placeholders(len(p.Exclude)) + ")"
		args = append(args, idArgs(p.Exclude)...)
	}
	rows, err := t.queryWorkflows(ctx, q+" ORDER BY w.id LIMIT ?"+t.lock(p.Lock), append(args, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("find stranded workflow waits: %w", err)
	}
	return rows, nil
}
