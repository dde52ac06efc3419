package sqlstore

// This file holds the bounded reads of a workflow's history: pages of
// events, signals, failures and artifacts with their large columns left
// out or cut, a workflow's step jobs a few per step, and counts.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queuety/queuety-go/store/driver"
)

// noLimit stands for "no LIMIT" where an OFFSET needs one.
const noLimit = 1 << 62

// limitClause returns " LIMIT n OFFSET m" for a page (none for the whole
// list).
func limitClause(offset, limit int) string {
	if limit <= 0 && offset <= 0 {
		return ""
	}
	if limit <= 0 {
		limit = noLimit
	}
	return " LIMIT " + strconv.Itoa(limit) + " OFFSET " + strconv.Itoa(max(offset, 0))
}

// cappedColumn selects a column, or NULL when it is left out, followed by
// the length of what was left out (0 when nothing was), named col and
// col_omitted. The numbers are formatted integers, never user text.
func cappedColumn(col string, omit bool, maxBytes int) string {
	value, length := col, "0"
	switch {
	case omit:
		value, length = "NULL", "COALESCE(LENGTH("+col+"), 0)"
	case maxBytes > 0:
		n := strconv.Itoa(maxBytes)
		value = "CASE WHEN LENGTH(" + col + ") > " + n + " THEN NULL ELSE " + col + " END"
		length = "CASE WHEN LENGTH(" + col + ") > " + n + " THEN LENGTH(" + col + ") ELSE 0 END"
	}
	return value + " AS " + col + ", " + length + " AS " + col + "_omitted"
}

// cappedLogCols are logCols with error_message and error_trace cut to n
// characters and a context longer than n left out.
func cappedLogCols(n int) string {
	m := strconv.Itoa(n)
	return strings.NewReplacer(
		"error_message,", "SUBSTR(error_message, 1, "+m+") AS error_message,",
		"error_trace,", "SUBSTR(error_trace, 1, "+m+") AS error_trace,",
		"context,", "CASE WHEN LENGTH(context) > "+m+" THEN NULL ELSE context END AS context,",
	).Replace(logCols)
}

// EventPage implements driver.Tx.
func (t *txn) EventPage(ctx context.Context, q driver.EventQuery) ([]*driver.WorkflowEvent, error) {
	var cols strings.Builder
	cols.WriteString("id, workflow_id, job_id, step_index, step_name, step_type, handler, event, queue, attempt")
	for _, c := range driver.EventColumns {
		cols.WriteString(", " + cappedColumn(c, q.Light && c != "error", q.MaxColumnBytes))
	}
	cols.WriteString(", duration_ms, created_at")
	where := []string{"workflow_id = ?"}
	args := []any{q.WorkflowID}
	if len(q.IDs) > 0 {
		where = append(where, "id IN ("+placeholders(len(q.IDs))+")")
		args = append(args, idArgs(q.IDs)...)
	}
	if q.StepIndex != nil {
		where = append(where, "step_index = ?")
		args = append(args, *q.StepIndex)
	}
	if len(q.Events) > 0 {
		where = append(where, "event IN ("+placeholders(len(q.Events))+")")
		for _, e := range q.Events {
			args = append(args, string(e))
		}
	}
	if q.WithStateAfter {
		where = append(where, "state_after IS NOT NULL")
	}
	order := " ORDER BY id"
	switch q.Order {
	case driver.EventsNewestFirst:
		order = " ORDER BY id DESC"
	case driver.EventsByTime:
		order = " ORDER BY created_at, id"
	}
	stmt := "SELECT " + cols.String() + " FROM " + t.s.T.Events + " WHERE " + strings.Join(where, " AND ") + order + limitClause(q.Offset, q.Limit)
	out, err := queryAll(ctx, t.tx, scanEventPage, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("list events of workflow %d: %w", q.WorkflowID, err)
	}
	return out, nil
}

// scanEventPage scans a row of EventPage: an event whose JSON columns are
// each followed by the length left out.
func scanEventPage(sc scanner) (*driver.WorkflowEvent, error) {
	e := &driver.WorkflowEvent{}
	var event string
	var dur sql.NullInt64
	var attempt *int
	cols := []*[]byte{&e.Input, &e.Output, &e.StateBefore, &e.StateAfter, &e.Context, &e.Artifacts, &e.Chunks, &e.Error}
	var omitted [8]int64
	dests := []any{&e.ID, &e.WorkflowID, nullInt{&e.JobID}, &e.StepIndex, nullString{&e.StepName}, nullString{&e.StepType},
		&e.Handler, &event, nullString{&e.Queue}, nullIntPtr{&attempt}}
	for i, c := range cols {
		dests = append(dests, nullBytes{c}, &omitted[i])
	}
	dests = append(dests, &dur, nullTime{&e.CreatedAt})
	if err := sc.Scan(dests...); err != nil {
		return nil, fmt.Errorf("scan workflow event: %w", err)
	}
	for i, n := range omitted {
		if n > 0 {
			if e.Omitted == nil {
				e.Omitted = map[string]int64{}
			}
			e.Omitted[driver.EventColumns[i]] = n
		}
	}
	e.Event = driver.EventType(event)
	e.Attempt = attempt
	if dur.Valid {
		e.DurationMS = &dur.Int64
	}
	return e, nil
}

// EventCount implements driver.Tx.
func (t *txn) EventCount(ctx context.Context, wfID int64) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Events+" WHERE workflow_id = ?", wfID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events of workflow %d: %w", wfID, err)
	}
	return n, nil
}

// EventSteps implements driver.Tx: distinct entries of the (workflow_id,
// step_index) index.
func (t *txn) EventSteps(ctx context.Context, wfID int64) ([]int, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT DISTINCT step_index FROM "+t.s.T.Events+" WHERE workflow_id = ? ORDER BY step_index", wfID)
	if err != nil {
		return nil, fmt.Errorf("list event steps of workflow %d: %w", wfID, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, fmt.Errorf("list event steps of workflow %d: %w", wfID, err)
		}
		out = append(out, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list event steps of workflow %d: %w", wfID, err)
	}
	return out, nil
}

// LogCount implements driver.Tx.
func (t *txn) LogCount(ctx context.Context, f driver.LogFilter) (int64, error) {
	where, args := t.logWhere(f)
	var n int64
	if err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Logs+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count log rows: %w", err)
	}
	return n, nil
}

// JobListByStep implements driver.Tx: a window over each step's jobs keeps
// the first PerStep of them, those not completed first, then the newest
// (the workflow's jobs of no step count as one more step).
func (t *txn) JobListByStep(ctx context.Context, q driver.JobStepQuery) ([]*driver.Job, error) {
	omitAll := q.MaxPayloadBytes < 0
	cols := strings.Replace(jobCols, "payload, ", cappedColumn("payload", omitAll, q.MaxPayloadBytes)+", ", 1)
	if omitAll {
		cols = strings.Replace(cols, "heartbeat_data, ", "NULL AS heartbeat_data, ", 1)
	}
	inner := "SELECT " + cols + " FROM " + t.s.T.Jobs + t.s.D.ByWorkflow + " WHERE workflow_id = ?"
	args := []any{q.WorkflowID}
	var stmt string
	if q.PerStep > 0 {
		stmt = "SELECT * FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY step_index ORDER BY CASE WHEN status = 'completed' THEN 1 ELSE 0 END, id DESC) AS rn FROM (" +
			inner + ") x) y WHERE rn <= ? ORDER BY id"
		args = append(args, q.PerStep)
	} else {
		stmt = inner + " ORDER BY id"
	}
	rows, err := t.tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs of workflow %d by step: %w", q.WorkflowID, err)
	}
	defer rows.Close()
	s := newJobScanner()
	// The payload's length follows the payload column.
	var omitted int64
	dests := make([]any, 0, len(s.dests)+2)
	dests = append(dests, s.dests[:4]...)
	dests = append(dests, &omitted)
	dests = append(dests, s.dests[4:]...)
	var rn int64
	if q.PerStep > 0 {
		dests = append(dests, &rn)
	}
	var out []*driver.Job
	for rows.Next() {
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		j := s.finish()
		j.OmittedPayloadBytes = omitted
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list jobs of workflow %d by step: %w", q.WorkflowID, err)
	}
	return out, nil
}

// JobStepCounts implements driver.Tx.
func (t *txn) JobStepCounts(ctx context.Context, wfID int64) ([]driver.JobStepCount, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT COALESCE(step_index, -1) AS si, status, COUNT(*) FROM "+t.s.T.Jobs+t.s.D.ByWorkflow+
		" WHERE workflow_id = ? GROUP BY si, status ORDER BY si, status", wfID)
	if err != nil {
		return nil, fmt.Errorf("count jobs of workflow %d: %w", wfID, err)
	}
	defer rows.Close()
	var out []driver.JobStepCount
	for rows.Next() {
		var c driver.JobStepCount
		var status string
		if err := rows.Scan(&c.StepIndex, &status, &c.Count); err != nil {
			return nil, fmt.Errorf("count jobs of workflow %d: %w", wfID, err)
		}
		c.Status = driver.JobStatus(status)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs of workflow %d: %w", wfID, err)
	}
	return out, nil
}

// reverse puts the rows of a newest-first read in id order.
func reverse[T any](rows []T) []T {
	slices.Reverse(rows)
	return rows
}

// signalPageSQL reads the newest q.Limit signals newest first, through
// the (workflow_id, id) index.
func signalPageSQL(t Tables, q driver.SignalQuery) string {
	where := "workflow_id = ?"
	if len(q.IDs) > 0 {
		where += " AND id IN (" + placeholders(len(q.IDs)) + ")"
	}
	return "SELECT id, workflow_id, signal_name, " + cappedColumn("payload", q.MaxPayloadBytes < 0, q.MaxPayloadBytes) +
		", received_at FROM " + t.Signals + " WHERE " + where + " ORDER BY id DESC" + limitClause(0, q.Limit)
}

// SignalPage implements driver.Tx: the newest q.Limit signals, in id
// order.
func (t *txn) SignalPage(ctx context.Context, q driver.SignalQuery) ([]*driver.Signal, error) {
	args := append([]any{q.WorkflowID}, idArgs(q.IDs)...)
	out, err := queryAll(ctx, t.tx, func(sc scanner) (*driver.Signal, error) {
		s := &driver.Signal{}
		if err := sc.Scan(&s.ID, &s.WorkflowID, &s.Name, nullBytes{&s.Payload}, &s.OmittedPayloadBytes, nullTime{&s.ReceivedAt}); err != nil {
			return nil, fmt.Errorf("scan signal: %w", err)
		}
		return s, nil
	}, t.s.SQL.SignalPage(q), args...)
	if err != nil {
		return nil, fmt.Errorf("list signals of workflow %d: %w", q.WorkflowID, err)
	}
	return reverse(out), nil
}

// SignalCount implements driver.Tx.
func (t *txn) SignalCount(ctx context.Context, wfID int64) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Signals+" WHERE workflow_id = ?", wfID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count signals of workflow %d: %w", wfID, err)
	}
	return n, nil
}

// failureCols are the failures table's columns, in scanFailure's order;
// "message" is replaced when a read cuts it.
const failureCols = "id, workflow_id, job_id, step_index, attempt, run_number, category, timeout_kind, non_retryable, message, " +
	"error_class, deadline_at, created_at"

func scanFailure(sc scanner) (*driver.Failure, error) {
	f := &driver.Failure{}
	var attempt, run int64
	var cat, kind string
	var nr int
	if err := sc.Scan(&f.ID, nullInt{&f.WorkflowID}, nullInt{&f.JobID}, nullIntPtr{&f.StepIndex}, nullInt{&attempt}, nullInt{&run},
		&cat, nullString{&kind}, &nr, nullString{&f.Message}, nullString{&f.ErrorClass}, nullTime{&f.DeadlineAt}, nullTime{&f.CreatedAt}); err != nil {
		return nil, fmt.Errorf("scan failure: %w", err)
	}
	f.Attempt, f.RunNumber = int(attempt), int(run)
	f.Category, f.TimeoutKind, f.NonRetryable = driver.FailureCategory(cat), driver.TimeoutKind(kind), nr != 0
	return f, nil
}

// failurePageSQL reads the newest q.Limit failures newest first, through
// the (workflow_id, id) index or the job index. A cut message is read up
// to one character past the cut, so that a cut is known without the
// message's full length.
func failurePageSQL(t Tables, q driver.FailureQuery) string {
	var where []string
	if q.WorkflowID != 0 {
		where = append(where, "workflow_id = ?")
	}
	if len(q.JobIDs) > 0 {
		where = append(where, "job_id IN ("+placeholders(len(q.JobIDs))+")")
	}
	if q.TimedOut {
		where = append(where, "timeout_kind IS NOT NULL AND timeout_kind <> ''")
	}
	cols := failureCols
	if q.MaxMessageChars > 0 {
		cols = strings.Replace(cols, " message,", " SUBSTR(message, 1, "+strconv.Itoa(q.MaxMessageChars+1)+") AS message,", 1)
	}
	return "SELECT " + cols + " FROM " + t.Failures + " WHERE " + strings.Join(where, " AND ") + " ORDER BY id DESC" + limitClause(0, q.Limit)
}

// FailurePage implements driver.Tx: the newest q.Limit failures, in id
// order.
func (t *txn) FailurePage(ctx context.Context, q driver.FailureQuery) ([]*driver.Failure, error) {
	if q.WorkflowID == 0 && len(q.JobIDs) == 0 {
		return nil, fmt.Errorf("list failures: a query names a workflow or jobs")
	}
	var args []any
	if q.WorkflowID != 0 {
		args = append(args, q.WorkflowID)
	}
	args = append(args, idArgs(q.JobIDs)...)
	out, err := queryAll(ctx, t.tx, scanFailure, t.s.SQL.FailurePage(q), args...)
	if err != nil {
		return nil, fmt.Errorf("list failures of workflow %d: %w", q.WorkflowID, err)
	}
	if n := q.MaxMessageChars; n > 0 {
		for _, f := range out {
			if utf8.RuneCountInString(f.Message) > n {
				f.Message, f.MessageCut = cutChars(f.Message, n), true
			}
		}
	}
	return reverse(out), nil
}

// cutChars returns the first n characters of s.
func cutChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// FailureCountByCategory implements driver.Tx: a grouped read of the
// (workflow_id, category) index.
func (t *txn) FailureCountByCategory(ctx context.Context, wfID int64) ([]driver.FailureCount, error) {
	out, err := queryAll(ctx, t.tx, func(sc scanner) (driver.FailureCount, error) {
		var c driver.FailureCount
		var cat string
		err := sc.Scan(&cat, &c.Count)
		c.Category = driver.FailureCategory(cat)
		return c, err
	}, t.s.SQL.FailureCounts, wfID)
	if err != nil {
		return nil, fmt.Errorf("count failures of workflow %d: %w", wfID, err)
	}
	return out, nil
}

// artifactPageSQL reads the first q.Limit artifacts by key, through the
// (workflow_id, artifact_key) index.
func artifactPageSQL(t Tables, q driver.ArtifactQuery) string {
	where := "workflow_id = ?"
	if len(q.IDs) > 0 {
		where += " AND id IN (" + placeholders(len(q.IDs)) + ")"
	}
	omit := q.MaxValueBytes < 0
	return "SELECT id, workflow_id, artifact_key, kind, " + cappedColumn("content", omit, q.MaxValueBytes) + ", " +
		cappedColumn("metadata", omit, q.MaxValueBytes) + ", step_index, created_at, updated_at FROM " + t.Artifacts +
		" WHERE " + where + " ORDER BY artifact_key" + limitClause(0, q.Limit)
}

// ArtifactPage implements driver.Tx.
func (t *txn) ArtifactPage(ctx context.Context, q driver.ArtifactQuery) ([]*driver.Artifact, error) {
	args := append([]any{q.WorkflowID}, idArgs(q.IDs)...)
	out, err := queryAll(ctx, t.tx, func(sc scanner) (*driver.Artifact, error) {
		a := &driver.Artifact{}
		err := sc.Scan(&a.ID, &a.WorkflowID, &a.Key, &a.Kind, nullBytes{&a.Content}, &a.OmittedContentBytes, nullBytes{&a.Metadata},
			&a.OmittedMetadataBytes, nullIntPtr{&a.StepIndex}, nullTime{&a.CreatedAt}, nullTime{&a.UpdatedAt})
		if err != nil {
			return nil, fmt.Errorf("scan artifact: %w", err)
		}
		return a, nil
	}, t.s.SQL.ArtifactPage(q), args...)
	if err != nil {
		return nil, fmt.Errorf("list artifacts of workflow %d: %w", q.WorkflowID, err)
	}
	return out, nil
}

// ArtifactCount implements driver.Tx.
func (t *txn) ArtifactCount(ctx context.Context, wfID int64) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Artifacts+" WHERE workflow_id = ?", wfID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count artifacts of workflow %d: %w", wfID, err)
	}
	return n, nil
}
