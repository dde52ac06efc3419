package sqlstore

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

var (
	_ driver.WorkflowAdvanceTx = (*txn)(nil)
	_ driver.JobListManyTx     = (*txn)(nil)
)

// WorkflowAdvanceMany implements driver.WorkflowAdvanceTx: one UPDATE per
// statement-sized group, each column a CASE on id (or one value when the
// rows share it), guarded by each row's status, current step and state.
// The rows are locked in id order, as WorkflowGetMany locks them.
func (t *txn) WorkflowAdvanceMany(ctx context.Context, advances []driver.WorkflowAdvance) (int64, error) {
	var total int64
	for rows := advances; len(rows) > 0; {
		n := updateChunk(len(rows), func(i int) int { return len(rows[i].Workflow.State) + len(rows[i].FromState) })
		got, err := t.workflowAdvanceRows(ctx, rows[:n])
		if err != nil {
			return total, err
		}
		total += got
		rows = rows[n:]
	}
	return total, nil
}

// workflowAdvanceRows writes rows with one guarded statement.
func (t *txn) workflowAdvanceRows(ctx context.Context, rows []driver.WorkflowAdvance) (int64, error) {
	const cols = 5
	vals := make([][cols]any, len(rows))
	ids := make([]int64, len(rows))
	hint := 0
	for i, a := range rows {
		hint += len(a.Workflow.State) + len(a.FromState) + 128
		w := a.Workflow
		vals[i] = [cols]any{string(w.Status), w.State, w.CurrentStep, t.sec(w.CompletedAt), t.frac(w.WaitDeadlineAt)}
		ids[i] = w.ID
	}
	names := []string{"status", "state", "current_step", "completed_at", "wait_deadline_at"}
	u := newRowsUpdate(t, t.s.T.Workflows, ids, names, func(i, c int) any { return vals[i][c] }, hint)
	u.b.WriteString(" AND ")
	u.column("status", func(i int) any { return string(rows[i].FromStatus) }, "", "")
	u.b.WriteString(" AND ")
	u.column("current_step", func(i int) any { return rows[i].FromStep }, "", "")
	u.b.WriteString(" AND ")
	// The state is compared byte for byte, as the engine compares it:
	// MySQL's collation would take states that differ in case or
	// trailing spaces for the same.
	pre, post := "", ""
	if t.s.D.Name == "mysql" {
		pre, post = "CAST(", " AS BINARY)"
	}
	u.column("state", func(i int) any { return rows[i].FromState }, pre, post)
	res, err := t.tx.ExecContext(ctx, u.b.String(), u.args...)
	if err != nil {
		return 0, fmt.Errorf("advance %d workflows: %w", len(rows), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("advance %d workflows: %w", len(rows), err)
	}
	return n, nil
}
