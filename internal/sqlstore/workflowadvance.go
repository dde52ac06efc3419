package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/store/driver"
)

var _ driver.WorkflowAdvanceTx = (*txn)(nil)

// WorkflowAdvanceMany implements driver.WorkflowAdvanceTx: one UPDATE per
// statement-sized group, each column a CASE on id (or one value when the
// rows share it), guarded by each row's status, current step and state.
// The rows are locked in id order, as WorkflowGetMany locks them.
func (t *txn) WorkflowAdvanceMany(ctx context.Context, advances []driver.WorkflowAdvance) (int64, error) {
	var total int64
	for rows := advances; len(rows) > 0; {
		n, size := 0, 0
		for n < len(rows) && n < maxUpdateRows && (n == 0 || size+len(rows[n].Workflow.State)+len(rows[n].FromState) <= maxStatementBytes) {
			size += len(rows[n].Workflow.State) + len(rows[n].FromState) + 256
			n++
		}
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
	for i, a := range rows {
		w := a.Workflow
		vals[i] = [cols]any{string(w.Status), string(w.State), w.CurrentStep, t.sec(w.CompletedAt), t.frac(w.WaitDeadlineAt)}
	}
	names := [cols]string{"status", "state", "current_step", "completed_at", "wait_deadline_at"}
	var b strings.Builder
	args := make([]any, 0, 2*cols*len(rows)+6*len(rows))
	// column writes one column's values: one value when every row has it,
	// else a CASE on id. The ELSE gives the CASE the column's type where
	// parameters have none of their own (PostgreSQL).
	// wrap, when set, wraps both sides of the comparison (a guard that
	// compares bytes).
	column := func(col string, val func(i int) any, wrap func(string) string) {
		if wrap == nil {
			wrap = func(s string) string { return s }
		}
		same := true
		for i := 1; i < len(rows) && same; i++ {
			same = sameArg(val(i), val(0))
		}
		if same {
			b.WriteString(wrap(col) + " = " + wrap("?"))
			args = append(args, val(0))
			return
		}
		var c strings.Builder
		c.WriteString("CASE id")
		for i, a := range rows {
			c.WriteString(" WHEN ? THEN ?")
			args = append(args, a.Workflow.ID, val(i))
		}
		c.WriteString(" ELSE " + col + " END")
		b.WriteString(wrap(col) + " = " + wrap(c.String()))
	}
	b.WriteString("UPDATE " + t.s.T.Workflows + " SET ")
	for c, col := range names {
		if c > 0 {
			b.WriteString(", ")
		}
		column(col, func(i int) any { return vals[i][c] }, nil)
	}
	b.WriteString(" WHERE id IN (" + placeholders(len(rows)) + ")")
	for _, a := range rows {
		args = append(args, a.Workflow.ID)
	}
	b.WriteString(" AND ")
	column("status", func(i int) any { return string(rows[i].FromStatus) }, nil)
	b.WriteString(" AND ")
	column("current_step", func(i int) any { return rows[i].FromStep }, nil)
	b.WriteString(" AND ")
	// The state is compared byte for byte, as the engine compares it:
	// MySQL's collation would take states that differ in case or
	// trailing spaces for the same.
	var exact func(string) string
	if t.s.D.Name == "mysql" {
		exact = func(s string) string { return "CAST(" + s + " AS BINARY)" }
	}
	column("state", func(i int) any { return string(rows[i].FromState) }, exact)
	res, err := t.tx.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("advance %d workflows: %w", len(rows), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("advance %d workflows: %w", len(rows), err)
	}
	return n, nil
}
