package sqlstore

// This file holds the workflow, event, signal and failure row operations:
// what the workflow engine uses beyond jobs.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

func (t *txn) queryWorkflows(ctx context.Context, q string, args ...any) ([]*driver.Workflow, error) {
	return queryAll(ctx, t.tx, scanWorkflow, q, args...)
}

// EventInsert implements driver.Tx.
func (t *txn) EventInsert(ctx context.Context, events []*driver.WorkflowEvent) error {
	if len(events) == 0 {
		return nil
	}
	// Events carry whole states; keep each statement well under the
	// server's max_allowed_packet (16 MiB by default on MariaDB).
	if size, cut := eventsSize(events); (size > maxStatementBytes || len(events) > maxInsertRows) && len(events) > 1 {
		if err := t.EventInsert(ctx, events[:cut]); err != nil {
			return err
		}
		return t.EventInsert(ctx, events[cut:])
	}
	head := "INSERT INTO " + t.s.T.Events + " (workflow_id, job_id, step_index, step_name, step_type, handler, event, queue, " +
		"attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at) VALUES "
	size, _ := eventsSize(events)
	v := newRowValues(t, head, eventInsertTypes, len(events), size)
	for i, e := range events {
		v.row(i)
		v.int(e.WorkflowID)
		v.id(e.JobID)
		v.smallInt(e.StepIndex)
		v.nullStr(e.StepName)
		v.nullStr(e.StepType)
		v.str(e.Handler)
		v.str(string(e.Event))
		v.nullStr(e.Queue)
		v.intp(e.Attempt)
		v.text(e.Input)
		v.text(e.Output)
		v.text(e.StateBefore)
		v.text(e.StateAfter)
		v.text(e.Context)
		v.text(e.Artifacts)
		v.text(e.Chunks)
		v.text(e.Error)
		v.int64p(e.DurationMS)
		v.sec(e.CreatedAt)
		v.end()
	}
	q, args := v.statement()
	if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("insert workflow events: %w", err)
	}
	return nil
}

// eventInsertTypes are the types of EventInsert's columns
// (Dialect.Arrays).
var eventInsertTypes = []string{"BIGINT", "BIGINT", "SMALLINT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "SMALLINT",
	"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "BIGINT", "TIMESTAMP"}

// sharedTexts converts the JSON columns of a statement's rows to
// arguments (nullText), once for each distinct byte slice: a step's
// events share one encoding of the state before (their input and
// state_before), and a step's state_after is the next one's state_before.
type sharedTexts struct {
	last [4]sharedText
	next int
}

// sharedText is a converted slice and its argument.
type sharedText struct {
	b   []byte
	arg any
}

// arg returns nullText(b), reusing the string of a slice it converted
// recently.
func (st *sharedTexts) arg(b []byte) any {
	if b == nil {
		return nil
	}
	for _, l := range st.last {
		if len(l.b) == len(b) && len(b) > 0 && &l.b[0] == &b[0] {
			return l.arg
		}
	}
	arg := any(string(b))
	st.last[st.next] = sharedText{b, arg}
	st.next = (st.next + 1) % len(st.last)
	return arg
}

// maxStatementBytes bounds the payload of one multi-row INSERT.
const maxStatementBytes = 4 << 20

// maxInsertRows bounds the rows of one multi-row INSERT, so that its
// placeholders stay under SQLite's limit of 32,766 variables a statement
// and MySQL's 65,535 for a prepared statement (a for-each step inserts a
// job for each of its items).
const maxInsertRows = 500

// eventsSize returns the bytes of JSON the events carry and how many of
// the first ones fit in maxStatementBytes and maxInsertRows (at least
// one).
func eventsSize(events []*driver.WorkflowEvent) (total, cut int) {
	cut = len(events)
	for i, e := range events {
		total += len(e.Input) + len(e.Output) + len(e.StateBefore) + len(e.StateAfter) + len(e.Context) + len(e.Artifacts) + len(e.Chunks) + len(e.Error) + 256
		if (total > maxStatementBytes || i == maxInsertRows) && cut == len(events) {
			cut = max(i, 1)
		}
	}
	return total, cut
}

// EventList implements driver.Tx.
func (t *txn) EventList(ctx context.Context, wfID int64) ([]*driver.WorkflowEvent, error) {
	return queryAll(ctx, t.tx, scanEvent, "SELECT "+eventCols+" FROM "+t.s.T.Events+" WHERE workflow_id = ? ORDER BY id", wfID)
}

// WorkflowInsert implements driver.Tx.
func (t *txn) WorkflowInsert(ctx context.Context, w *driver.Workflow) error {
	q := "INSERT INTO " + t.s.T.Workflows + " (name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index, " +
		"started_at, deadline_at, run_number, run_started_at, run_deadline_at, wait_deadline_at) VALUES (" + placeholders(13) + ")"
	ids, err := t.insert(ctx, q, 1, w.Name, string(w.Status), string(w.State), w.CurrentStep, w.TotalSteps,
		nullID(w.ParentWorkflowID), nullIntp(w.ParentStepIndex), t.sec(w.StartedAt), t.sec(w.DeadlineAt),
		nullID(int64(w.RunNumber)), t.frac(w.RunStartedAt), t.frac(w.RunDeadlineAt), t.frac(w.WaitDeadlineAt))
	if err != nil {
		return fmt.Errorf("insert workflow: %w", err)
	}
	w.ID = ids[0]
	return nil
}

// WorkflowGet implements driver.Tx.
func (t *txn) WorkflowGet(ctx context.Context, id int64, lock driver.LockMode) (*driver.Workflow, error) {
	return queryOne(ctx, t.tx, scanWorkflow, "workflow", id, t.s.q.wfByID+t.lock(lock))
}

// WorkflowGetMany implements driver.Tx.
func (t *txn) WorkflowGetMany(ctx context.Context, ids []int64, lock driver.LockMode) ([]*driver.Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := t.idsIn("id", ids, false)
	q := "SELECT " + workflowCols + " FROM " + t.s.T.Workflows + " WHERE " + in + " ORDER BY id" + t.lock(lock)
	return t.queryWorkflows(ctx, q, args...)
}

// WorkflowUpdate implements driver.Tx, with a prepared statement on a
// store that keeps them (its state is bound, not escaped into the text).
func (t *txn) WorkflowUpdate(ctx context.Context, w *driver.Workflow) error {
	v := t.workflowUpdateArgs(w)
	_, err := t.execHot(ctx, t.s.q.wfUpdate, append(v[:], w.ID)...)
	if err != nil {
		return fmt.Errorf("update workflow %d: %w", w.ID, err)
	}
	return nil
}

// workflowUpdateCols are the columns WorkflowUpdate and WorkflowUpdateMany
// write, in the order of workflowUpdateArgs.
var workflowUpdateCols = [...]string{"status", "state", "current_step", "total_steps", "completed_at", "failed_at",
	"error_message", "deadline_at", "run_number", "run_started_at", "run_deadline_at", "wait_deadline_at"}

// workflowUpdateArgs returns the values WorkflowUpdate writes for w, in the
// order of workflowUpdateCols.
func (t *txn) workflowUpdateArgs(w *driver.Workflow) [len(workflowUpdateCols)]any {
	return [...]any{string(w.Status), string(w.State), w.CurrentStep, w.TotalSteps,
		t.sec(w.CompletedAt), t.sec(w.FailedAt), nullStr(w.ErrorMessage), t.sec(w.DeadlineAt), nullID(int64(w.RunNumber)),
		t.frac(w.RunStartedAt), t.frac(w.RunDeadlineAt), t.frac(w.WaitDeadlineAt)}
}

// maxUpdateRows bounds the rows of one WorkflowUpdateMany statement.
const maxUpdateRows = 200

// WorkflowUpdateMany implements driver.Tx: one UPDATE for all the rows. A
// column whose value is the same for every row is set to that value; the
// others are set with a CASE on id.
func (t *txn) WorkflowUpdateMany(ctx context.Context, wfs []*driver.Workflow) error {
	// The last entry of a workflow wins, as with one UPDATE per entry.
	last := make(map[int64]int, len(wfs))
	for i, w := range wfs {
		last[w.ID] = i
	}
	rows := wfs
	if len(last) < len(wfs) {
		rows = make([]*driver.Workflow, 0, len(last))
		for i, w := range wfs {
			if last[w.ID] == i {
				rows = append(rows, w)
			}
		}
	}
	// On a store that keeps statements prepared, a large state goes alone
	// through WorkflowUpdate's prepared statement, in the order given: the
	// server reads a bound value as is, where it scans a long literal
	// escape by escape (17 ms of server CPU for a state of 775 KB against
	// 7.5 ms bound, on MariaDB 10.11).
	bound := func(w *driver.Workflow) bool { return t.s.stmts != nil && len(w.State) >= minBoundState }
	for len(rows) > 0 {
		if bound(rows[0]) {
			if err := t.WorkflowUpdate(ctx, rows[0]); err != nil {
				return err
			}
			rows = rows[1:]
			continue
		}
		upTo := len(rows) // the rows before the next bound one
		if i := slices.IndexFunc(rows, bound); i > 0 {
			upTo = i
		}
		n := updateChunk(upTo, func(i int) int { return len(rows[i].State) })
		if err := t.workflowUpdateRows(ctx, rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// minBoundState is the smallest state WorkflowUpdateMany writes with a
// prepared statement of its own rather than in a multi-row UPDATE, on a
// store that keeps statements prepared: past it, the server's scan of
// the literal costs more than the statement's round trip.
const minBoundState = 32 << 10

// workflowUpdateRows writes the rows, each id at most once, with one
// statement.
func (t *txn) workflowUpdateRows(ctx context.Context, wfs []*driver.Workflow) error {
	if len(wfs) == 1 {
		return t.WorkflowUpdate(ctx, wfs[0])
	}
	vals := make([][len(workflowUpdateCols)]any, len(wfs))
	for i, w := range wfs {
		vals[i] = t.workflowUpdateArgs(w)
	}
	ids := make([]int64, len(wfs))
	for i, w := range wfs {
		ids[i] = w.ID
	}
	hint := 0
	for _, w := range wfs {
		hint += len(w.State) + 256
	}
	u := newRowsUpdate(t, t.s.T.Workflows, ids, workflowUpdateCols[:], func(i, c int) any { return vals[i][c] }, hint)
	if _, err := t.tx.ExecContext(ctx, u.b.String(), u.args...); err != nil {
		return fmt.Errorf("update %d workflows: %w", len(wfs), err)
	}
	return nil
}

// updateChunk returns how many of count rows go in one multi-row UPDATE:
// at most maxUpdateRows and, past the first, maxStatementBytes of their
// bytes (size(i), plus 256 a row for the rest of its values).
func updateChunk(count int, size func(i int) int) int {
	n, total := 0, 0
	for n < count && n < maxUpdateRows && (n == 0 || total+size(n) <= maxStatementBytes) {
		total += size(n) + 256
		n++
	}
	return n
}

// rowsUpdate builds a multi-row UPDATE of rows with ids: each column is
// set, or compared, to one value when every row has it and otherwise to a
// CASE on id. With Dialect.Literals, the values that have a literal are
// written as one (writeLiteral), the others as parameters; a []byte value
// is a text column's, passed as a string.
type rowsUpdate struct {
	stmtText
	ids []int64
}

// newRowsUpdate starts "UPDATE table SET ... WHERE id IN (...)" for the
// rows with ids, setting each of cols to val(row, column); hint is the
// statement's expected size with literals.
func newRowsUpdate(t *txn, table string, ids []int64, cols []string, val func(i, c int) any, hint int) *rowsUpdate {
	u := &rowsUpdate{ids: ids, stmtText: stmtText{literal: t.s.D.Literals}}
	if u.literal {
		u.b.Grow(hint)
	}
	// By primary key (Dialect.ByID): MariaDB otherwise reads a
	// workflows update through idx_status (status, id), the index of a
	// column it writes, buffering the rows to read them again.
	u.b.WriteString("UPDATE " + table + t.s.D.ByID + " SET ")
	for c, col := range cols {
		if c > 0 {
			u.b.WriteString(", ")
		}
		u.column(col, func(i int) any { return val(i, c) }, "", "")
	}
	u.whereIDs()
	return u
}

// column writes "col = value" for the rows' values val(i). pre and post,
// when set, wrap both sides (a comparison that must compare bytes).
func (u *rowsUpdate) column(col string, val func(i int) any, pre, post string) {
	same := true
	for i := 1; i < len(u.ids) && same; i++ {
		same = sameArg(val(i), val(0))
	}
	u.b.WriteString(pre + col + post + " = " + pre)
	if same {
		u.put(val(0))
		u.b.WriteString(post)
		return
	}
	u.b.WriteString("CASE id")
	for i, id := range u.ids {
		u.b.WriteString(" WHEN ")
		u.put(id)
		u.b.WriteString(" THEN ")
		u.put(val(i))
	}
	// Every row has its WHEN; the ELSE gives the CASE the column's type
	// where parameters have none of their own (PostgreSQL would take
	// them for text).
	u.b.WriteString(" ELSE " + col + " END" + post)
}

// whereIDs writes the WHERE clause that selects the rows.
func (u *rowsUpdate) whereIDs() {
	u.b.WriteString(" WHERE id IN (")
	for i, id := range u.ids {
		if i > 0 {
			u.b.WriteByte(',')
		}
		u.put(id)
	}
	u.b.WriteByte(')')
}

// sameArg reports whether two statement arguments are the same value; it
// may report false for equal values of types it does not compare.
func sameArg(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		b, ok := b.(string)
		return ok && a == b
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	case int:
		b, ok := b.(int)
		return ok && a == b
	case int64:
		b, ok := b.(int64)
		return ok && a == b
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b) && a.Location() == b.Location()
	}
	return false
}

// nonTerminal lists the workflow statuses a deadline applies to.
const nonTerminal = "'running', 'paused', 'waiting_for_signal', 'waiting_for_workflows'"

// WorkflowFindExpired implements driver.Tx: a range read of each
// (status, deadline) index that locks what it returns. With SKIP LOCKED,
// concurrent sweepers each take rows nobody else holds, so they split the
// work instead of queueing on the same rows.
func (t *txn) WorkflowFindExpired(ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
	q, args := excludeIDs(t.s.SQL.ExpiredExecution, t.sec(p.Now), p)
	out, err := t.queryWorkflows(ctx, q+t.lock(p.Lock), args...)
	if err != nil {
		return nil, fmt.Errorf("find expired workflows: %w", err)
	}
	if len(out) >= p.Limit {
		return out, nil
	}
	q, args = excludeIDs(t.s.SQL.ExpiredRun, t.frac(p.Now), p)
	run, err := t.queryWorkflows(ctx, q+t.lock(p.Lock), args...)
	if err != nil {
		return nil, fmt.Errorf("find expired workflows: %w", err)
	}
	return mergeByID(out, run, func(w *driver.Workflow) int64 { return w.ID }, p.Limit), nil
}

// excludeIDs adds p.Exclude to a find query that ends in "LIMIT ?" and
// takes one time argument, and returns the query and its arguments.
func excludeIDs(q string, at any, p driver.ExpiredParams) (string, []any) {
	if len(p.Exclude) == 0 {
		return q, []any{at, p.Limit}
	}
	q = strings.TrimSuffix(q, " LIMIT ?") + " AND id NOT IN (" + placeholders(len(p.Exclude)) + ") LIMIT ?"
	return q, append(append([]any{at}, idArgs(p.Exclude)...), p.Limit)
}

// WorkflowFindDeadlineFailed implements driver.Tx.
func (t *txn) WorkflowFindDeadlineFailed(ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
	q := "SELECT " + workflowCols + " FROM " + t.s.T.Workflows + " w WHERE status = 'failed' AND deadline_at >= ? AND deadline_at <= ?" +
		" AND error_message = 'Deadline exceeded' AND NOT EXISTS (SELECT 1 FROM " + t.s.T.Failures + " f WHERE f.workflow_id = w.id)"
	args := []any{t.sec(p.Since), t.sec(p.Now)}
	if len(p.Exclude) > 0 {
		q += " AND id NOT IN (" + placeholders(len(p.Exclude)) + ")"
		args = append(args, idArgs(p.Exclude)...)
	}
	out, err := t.queryWorkflows(ctx, q+" ORDER BY deadline_at, id LIMIT ?"+t.lock(p.Lock), append(args, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("find workflows expired elsewhere: %w", err)
	}
	return out, nil
}

// WorkflowFindWaitExpired implements driver.Tx.
func (t *txn) WorkflowFindWaitExpired(ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
	return t.queryWorkflows(ctx, t.s.SQL.WaitExpired+t.lock(p.Lock), t.frac(p.Now), p.Limit)
}

// WorkflowRunningPositions implements driver.Tx.
func (t *txn) WorkflowRunningPositions(ctx context.Context, afterID int64, limit int) ([]driver.WorkflowPosition, error) {
	out, err := queryAll(ctx, t.tx, func(sc scanner) (p driver.WorkflowPosition, err error) {
		return p, sc.Scan(&p.ID, &p.CurrentStep, &p.TotalSteps)
	}, t.s.SQL.RunningPositions, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read running workflows' positions: %w", err)
	}
	return out, nil
}

// WorkflowList implements driver.Tx.
func (t *txn) WorkflowList(ctx context.Context, f driver.WorkflowFilter) ([]*driver.Workflow, error) {
	var conds []string
	var args []any
	if f.Status != "" {
		conds, args = append(conds, "status = ?"), append(args, string(f.Status))
	}
	if f.Name != "" {
		conds, args = append(conds, "name = ?"), append(args, f.Name)
	}
	if f.Parent != 0 {
		conds, args = append(conds, "parent_workflow_id = ?"), append(args, f.Parent)
	}
	cols := workflowCols
	if f.WithoutState {
		cols = workflowColsWithoutState
	}
	q := "SELECT " + cols + " FROM " + t.s.T.Workflows
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	return t.queryWorkflows(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
}

// WorkflowCounts implements driver.Tx.
func (t *txn) WorkflowCounts(ctx context.Context) (map[driver.WorkflowStatus]int64, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT status, COUNT(*) FROM "+t.s.T.Workflows+" GROUP BY status")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[driver.WorkflowStatus]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[driver.WorkflowStatus(s)] = n
	}
	return out, rows.Err()
}

// DispatchKeyGet implements driver.Tx.
func (t *txn) DispatchKeyGet(ctx context.Context, key string) (int64, error) {
	var id int64
	err := t.tx.QueryRowContext(ctx, "SELECT workflow_id FROM "+t.s.T.DispatchKeys+" WHERE dispatch_key = ?", key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// DispatchKeyInsert implements driver.Tx.
func (t *txn) DispatchKeyInsert(ctx context.Context, key string, wfID int64, at time.Time) error {
	err := t.mayConflict(ctx, func() error {
		_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.DispatchKeys+" (dispatch_key, workflow_id, created_at) VALUES (?, ?, ?)", key, wfID, t.sec(at))
		return err
	})
	if err != nil && t.s.D.Duplicate(err) {
		return fmt.Errorf("idempotency key %q: %w", key, driver.ErrDuplicate)
	}
	return err
}

// SignalInsert implements driver.Tx.
func (t *txn) SignalInsert(ctx context.Context, s *driver.Signal) error {
	ids, err := t.insert(ctx, "INSERT INTO "+t.s.T.Signals+" (workflow_id, signal_name, payload, received_at) VALUES (?, ?, ?, ?)", 1,
		s.WorkflowID, s.Name, string(s.Payload), t.sec(s.ReceivedAt))
	if err != nil {
		return fmt.Errorf("insert signal: %w", err)
	}
	s.ID = ids[0]
	return nil
}

// SignalList implements driver.Tx.
func (t *txn) SignalList(ctx context.Context, wfID int64, names []string) ([]*driver.Signal, error) {
	q := "SELECT id, workflow_id, signal_name, payload, received_at FROM " + t.s.T.Signals + " WHERE workflow_id = ?"
	args := []any{wfID}
	if len(names) > 0 {
		q += " AND signal_name IN (" + placeholders(len(names)) + ")"
		for _, n := range names {
			args = append(args, n)
		}
	}
	rows, err := t.tx.QueryContext(ctx, q+" ORDER BY id", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*driver.Signal
	for rows.Next() {
		s := &driver.Signal{}
		if err := rows.Scan(&s.ID, &s.WorkflowID, &s.Name, nullBytes{&s.Payload}, nullTime{&s.ReceivedAt}); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// FailureInsert implements driver.Tx.
func (t *txn) FailureInsert(ctx context.Context, f *driver.Failure) error {
	q := "INSERT INTO " + t.s.T.Failures + " (workflow_id, job_id, step_index, attempt, run_number, category, timeout_kind, " +
		"non_retryable, message, error_class, deadline_at, created_at) VALUES (" + placeholders(12) + ")"
	ids, err := t.insert(ctx, q, 1, nullID(f.WorkflowID), nullID(f.JobID), nullIntp(f.StepIndex), nullID(int64(f.Attempt)),
		nullID(int64(f.RunNumber)), string(f.Category), nullStr(string(f.TimeoutKind)), boolInt(f.NonRetryable), truncate(f.Message, 65000),
		nullStr(truncate(f.ErrorClass, 255)), t.frac(f.DeadlineAt), t.frac(f.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert failure: %w", err)
	}
	f.ID = ids[0]
	return nil
}

// FailureList implements driver.Tx.
func (t *txn) FailureList(ctx context.Context, wfID, jobID int64) ([]*driver.Failure, error) {
	q := "SELECT " + failureCols + " FROM " + t.s.T.Failures
	var arg int64
	if wfID != 0 {
		q, arg = q+" WHERE workflow_id = ?", wfID
	} else {
		q, arg = q+" WHERE job_id = ?", jobID
	}
	return queryAll(ctx, t.tx, scanFailure, q+" ORDER BY id", arg)
}

// DependencySet implements driver.Tx.
func (t *txn) DependencySet(ctx context.Context, waitingID int64, stepIndex int, deps []int64, at time.Time) error {
	if err := t.DependencyClear(ctx, waitingID, stepIndex); err != nil || len(deps) == 0 {
		return err
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.s.T.Dependencies + " (waiting_workflow_id, step_index, dependency_workflow_id, created_at) VALUES ")
	args := make([]any, 0, 4*len(deps))
	for i, d := range deps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(" + placeholders(4) + ")")
		args = append(args, waitingID, stepIndex, d, t.sec(at))
	}
	if _, err := t.tx.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("insert workflow dependencies: %w", err)
	}
	return nil
}

// DependencyClear implements driver.Tx.
func (t *txn) DependencyClear(ctx context.Context, waitingID int64, stepIndex int) error {
	_, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Dependencies+" WHERE waiting_workflow_id = ? AND step_index = ?", waitingID, stepIndex)
	if err != nil {
		return fmt.Errorf("delete workflow dependencies: %w", err)
	}
	return nil
}

// DependencyWaiters implements driver.Tx.
func (t *txn) DependencyWaiters(ctx context.Context, depIDs []int64) ([]driver.DependencyWaiter, error) {
	if len(depIDs) == 0 {
		return nil, nil
	}
	in, args := t.idsIn("dependency_workflow_id", depIDs, false)
	rows, err := t.tx.QueryContext(ctx, "SELECT DISTINCT waiting_workflow_id, step_index, dependency_workflow_id FROM "+t.s.T.Dependencies+
		" WHERE "+in+" ORDER BY waiting_workflow_id, step_index, dependency_workflow_id", args...)
	if err != nil {
		return nil, fmt.Errorf("list workflow dependency waiters: %w", err)
	}
	defer rows.Close()
	var out []driver.DependencyWaiter
	for rows.Next() {
		var w driver.DependencyWaiter
		if err := rows.Scan(&w.WorkflowID, &w.StepIndex, &w.DependencyID); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// DependencySatisfy implements driver.Tx.
func (t *txn) DependencySatisfy(ctx context.Context, w driver.DependencyWaiter, depID int64, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.Dependencies+" SET satisfied_at = ? WHERE waiting_workflow_id = ? AND step_index = ?"+
		" AND dependency_workflow_id = ? AND satisfied_at IS NULL", t.sec(at), w.WorkflowID, w.StepIndex, depID)
	if err != nil {
		return fmt.Errorf("mark workflow dependency satisfied: %w", err)
	}
	return nil
}

// DependencyList implements driver.Tx.
func (t *txn) DependencyList(ctx context.Context, waitingID int64) ([]*driver.WorkflowDependency, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT id, waiting_workflow_id, step_index, dependency_workflow_id, satisfied_at, created_at FROM "+
		t.s.T.Dependencies+" WHERE waiting_workflow_id = ? ORDER BY id", waitingID)
	if err != nil {
		return nil, fmt.Errorf("list workflow dependencies: %w", err)
	}
	defer rows.Close()
	var out []*driver.WorkflowDependency
	for rows.Next() {
		d := &driver.WorkflowDependency{}
		if err := rows.Scan(&d.ID, &d.WaitingWorkflowID, &d.StepIndex, &d.DependencyWorkflowID, nullTime{&d.SatisfiedAt}, nullTime{&d.CreatedAt}); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DependencyInsert implements driver.Tx.
func (t *txn) DependencyInsert(ctx context.Context, deps []*driver.WorkflowDependency) error {
	for _, d := range deps {
		_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.Dependencies+
			" (waiting_workflow_id, step_index, dependency_workflow_id, satisfied_at, created_at) VALUES ("+placeholders(5)+")",
			d.WaitingWorkflowID, d.StepIndex, d.DependencyWorkflowID, t.sec(d.SatisfiedAt), t.sec(d.CreatedAt))
		if err != nil {
			return fmt.Errorf("insert workflow dependency: %w", err)
		}
	}
	return nil
}
