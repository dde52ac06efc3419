package sqlstore

// This file holds the job row operations: insert, read, update, complete,
// list and purge.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

func (t *txn) queryJobs(ctx context.Context, q string, args ...any) ([]*driver.Job, error) {
	return queryAll(ctx, t.tx, newJobScanner().scan, q, args...)
}

// JobInsert implements driver.Tx.
func (t *txn) JobInsert(ctx context.Context, jobs []*driver.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if len(jobs) > maxInsertRows {
		for len(jobs) > 0 {
			part := jobs[:min(maxInsertRows, len(jobs))]
			if err := t.JobInsert(ctx, part); err != nil { // notes part
				return err
			}
			jobs = jobs[len(part):]
		}
		return nil
	}
	jobnote.Inserted(ctx, jobs) // the caller wakes idle workers once it committed
	const cols = "queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, available_at, " +
		"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units, created_at, " +
		"schedule_to_start_at, schedule_to_close_at, reserved_at, claim_token, start_to_close_at, heartbeat_deadline_at"
	size := 0
	for _, j := range jobs {
		size += len(j.Payload) + len(j.Queue) + len(j.Handler) + 256
	}
	v := newRowValues(t, "INSERT INTO "+t.s.T.Jobs+" ("+cols+") VALUES ", jobInsertTypes, len(jobs), size)
	for i, j := range jobs {
		v.row(i)
		status := j.Status
		if status == "" {
			status = driver.JobPending
		}
		v.str(j.Queue)
		v.str(j.Handler)
		v.bytes(j.Payload)
		v.nullStr(j.PayloadHash)
		v.smallInt(int(j.Priority))
		v.str(string(status))
		v.smallInt(j.Attempts)
		v.smallInt(j.MaxAttempts)
		v.sec(j.AvailableAt)
		v.id(j.WorkflowID)
		v.intp(j.StepIndex)
		v.id(j.DependsOn)
		v.id(j.BatchID)
		v.nullStr(j.ConcurrencyGroup)
		if j.ConcurrencyLimit > 0 {
			v.smallInt(j.ConcurrencyLimit)
		} else {
			v.null()
		}
		v.smallInt(j.CostUnits)
		v.sec(j.CreatedAt)
		v.frac(j.ScheduleToStartAt)
		v.frac(j.ScheduleToCloseAt)
		v.sec(j.ReservedAt)
		v.id(j.ClaimToken)
		v.frac(j.StartToCloseAt)
		v.frac(j.HeartbeatDeadline)
		v.end()
	}
	q, args := v.statement()
	ids, err := t.insertWritten(ctx, q, len(jobs), args...)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	for i, j := range jobs {
		j.ID = ids[i]
		j.Status = status(j.Status)
	}
	return nil
}

// jobInsertTypes are the types of JobInsert's columns (Dialect.Arrays).
var jobInsertTypes = []string{"TEXT", "TEXT", "TEXT", "TEXT", "SMALLINT", "TEXT", "SMALLINT", "SMALLINT", "TIMESTAMP",
	"BIGINT", "SMALLINT", "BIGINT", "BIGINT", "TEXT", "INTEGER", "BIGINT", "TIMESTAMP",
	"TIMESTAMP", "TIMESTAMP", "TIMESTAMP", "BIGINT", "TIMESTAMP", "TIMESTAMP"}

// increment reads the step between auto-increment ids before an insert of
// n rows, when n > 1 and the dialect has to read it (Dialect.Increment);
// 0 otherwise.
func (t *txn) increment(ctx context.Context, n int) (int64, error) {
	if n < 2 || t.s.D.Increment == "" {
		return 0, nil
	}
	var step int64
	if err := t.tx.QueryRowContext(ctx, t.s.D.Increment).Scan(&step); err != nil {
		return 0, fmt.Errorf("read the auto-increment step: %w", err)
	}
	return max(step, 1), nil
}

// insertIDs returns the ids of the n rows one INSERT took: from the step
// read before it (step > 0), checked against the step read after it, or
// from the dialect's InsertIDs.
func (t *txn) insertIDs(ctx context.Context, res sql.Result, n int, step int64) ([]int64, error) {
	if step == 0 {
		return t.s.D.InsertIDs(res, n)
	}
	after, err := t.increment(ctx, n)
	if err != nil {
		return nil, err
	}
	if after != step {
		return nil, fmt.Errorf("%w (from %d to %d)", errIncrementChanged, step, after)
	}
	first, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = first + int64(i)*step
	}
	return ids, nil
}

func status(s driver.JobStatus) driver.JobStatus {
	if s == "" {
		return driver.JobPending
	}
	return s
}

// JobGet implements driver.Tx.
func (t *txn) JobGet(ctx context.Context, id int64, lock driver.LockMode) (*driver.Job, error) {
	return queryOne(ctx, t.tx, scanJob, "job", id, t.s.q.jobByID+t.lock(lock))
}

// JobGetMany implements driver.Tx.
func (t *txn) JobGetMany(ctx context.Context, ids []int64, lock driver.LockMode) ([]*driver.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := t.idsIn("id", ids, false)
	q := "SELECT " + jobCols + " FROM " + t.s.T.Jobs + t.s.D.ByID + " WHERE " + in + " ORDER BY id" + t.lock(lock)
	return t.queryJobs(ctx, q, args...)
}

// JobUpdate implements driver.Tx.
func (t *txn) JobUpdate(ctx context.Context, j *driver.Job) error {
	_, err := t.tx.ExecContext(ctx, t.s.q.jobsUpdate, nullStr(j.PayloadHash), int(j.Priority), string(j.Status), j.Attempts,
		j.MaxAttempts, t.sec(j.AvailableAt), t.sec(j.ReservedAt), t.sec(j.CompletedAt), t.sec(j.FailedAt),
		nullStr(j.ErrorMessage), nullID(j.WorkflowID), nullIntp(j.StepIndex), nullID(j.DependsOn), nullText(j.HeartbeatData),
		nullID(j.ClaimToken), t.frac(j.ScheduleToStartAt), t.frac(j.StartToCloseAt), t.frac(j.ScheduleToCloseAt),
		t.frac(j.HeartbeatDeadline), t.frac(j.LastHeartbeatAt), j.ID)
	if err != nil {
		return fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return nil
}

// completeSet marks jobs completed (completed_at is the one argument) and
// clears their activity deadlines.
const completeSet = " SET status = 'completed', completed_at = ?, start_to_close_at = NULL, " +
	"heartbeat_deadline_at = NULL, schedule_to_start_at = NULL, schedule_to_close_at = NULL "

// allStatuses are the values of the jobs' status column (its CHECK
// constraint on PostgreSQL and SQLite, its ENUM of values on MySQL).
var allStatuses = []driver.JobStatus{driver.JobPending, driver.JobProcessing, driver.JobCompleted, driver.JobFailed, driver.JobBuried}

// statusIn is the condition that a job's status is one of statuses, and
// its arguments: status IN (?, ...), or with Dialect.StatusByComplement
// status NOT IN the other statuses, written out (no arguments; "TRUE"
// when none is left out).
func (d Dialect) statusIn(statuses ...driver.JobStatus) (string, []any) {
	var args []any
	if !d.StatusByComplement {
		for _, s := range statuses {
			args = append(args, string(s))
		}
		return "status IN (" + placeholders(len(args)) + ")", args
	}
	var out []string
	for _, s := range allStatuses {
		if !slices.Contains(statuses, s) {
			out = append(out, "'"+string(s)+"'")
		}
	}
	if len(out) == 0 {
		return "TRUE", nil
	}
	return "status NOT IN (" + strings.Join(out, ", ") + ")", nil
}

// JobComplete implements driver.Tx.
func (t *txn) JobComplete(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, inArgs := t.idsIn("id", ids, false)
	active, activeArgs := t.s.D.statusIn(driver.JobPending, driver.JobProcessing)
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + completeSet + "WHERE " + in + " AND " + active
	args := append(append([]any{t.sec(at)}, inArgs...), activeArgs...)
	if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("complete jobs: %w", err)
	}
	return t.completed(ctx, ids)
}

// completed tells the job note of ctx that the transaction completed the
// jobs of ids (jobnote.Completed): its hook notes their pending
// dependents as claimable, whichever path completed them.
func (t *txn) completed(ctx context.Context, ids []int64) error {
	if err := jobnote.Completed(ctx, t, ids); err != nil {
		return fmt.Errorf("completed jobs' dependents: %w", err)
	}
	return nil
}

// JobListByWorkflow implements driver.Tx.
func (t *txn) JobListByWorkflow(ctx context.Context, wfID int64, statuses []driver.JobStatus, lock driver.LockMode) ([]*driver.Job, error) {
	q := "SELECT " + jobCols + " FROM " + t.s.T.Jobs + t.s.D.ByWorkflow + " WHERE workflow_id = ?"
	args := []any{wfID}
	if len(statuses) > 0 {
		cond, condArgs := t.s.D.statusIn(statuses...)
		q += " AND " + cond
		args = append(args, condArgs...)
	}
	return t.queryJobs(ctx, q+" ORDER BY id"+t.lock(lock), args...)
}

// JobListByWorkflows implements driver.JobListManyTx.
func (t *txn) JobListByWorkflows(ctx context.Context, wfIDs []int64, statuses []driver.JobStatus, lock driver.LockMode) ([]*driver.Job, error) {
	if len(wfIDs) == 0 {
		return nil, nil
	}
	if len(wfIDs) == 1 {
		return t.JobListByWorkflow(ctx, wfIDs[0], statuses, lock)
	}
	q := "SELECT " + jobCols + " FROM " + t.s.T.Jobs + t.s.D.ByWorkflow + " WHERE workflow_id IN (" + placeholders(len(wfIDs)) + ")"
	args := idArgs(wfIDs)
	if len(statuses) > 0 {
		cond, condArgs := t.s.D.statusIn(statuses...)
		q += " AND " + cond
		args = append(args, condArgs...)
	}
	return t.queryJobs(ctx, q+" ORDER BY id"+t.lock(lock), args...)
}

// JobFindActiveByHash implements driver.Tx.
func (t *txn) JobFindActiveByHash(ctx context.Context, handler string, hashes ...string) (int64, error) {
	if len(hashes) == 0 {
		return 0, nil
	}
	cond, args := "payload_hash = ?", []any{handler, hashes[0]}
	if len(hashes) > 1 {
		cond = "payload_hash IN (" + placeholders(len(hashes)) + ")"
		args = args[:1]
		for _, h := range hashes {
			args = append(args, h)
		}
	}
	var id int64
	err := t.tx.QueryRowContext(ctx, "SELECT id FROM "+t.s.T.Jobs+" WHERE handler = ? AND "+cond+
		" AND status IN ('pending', 'processing') ORDER BY id LIMIT 1", args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("find active job by payload hash: %w", err)
	}
	return id, nil
}

// JobFindActiveUnique implements driver.Tx: the pending and processing
// jobs of the handler through idx_handler_status (or idx_unique), their
// hash and payload length checked on the row. OCTET_LENGTH counts bytes in
// MySQL, MariaDB and SQLite alike.
func (t *txn) JobFindActiveUnique(ctx context.Context, handler string, payloadLen int) ([]*driver.Job, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT id, payload FROM "+t.s.T.Jobs+" WHERE handler = ? AND payload_hash IS NOT NULL"+
		" AND status IN ('pending', 'processing') AND OCTET_LENGTH(payload) = ? ORDER BY id", handler, payloadLen)
	if err != nil {
		return nil, fmt.Errorf("find active unique jobs: %w", err)
	}
	defer rows.Close()
	var out []*driver.Job
	for rows.Next() {
		j := &driver.Job{}
		if err := rows.Scan(&j.ID, &j.Payload); err != nil {
			return nil, fmt.Errorf("find active unique jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find active unique jobs: %w", err)
	}
	return out, nil
}

// JobCountActiveByHandler implements driver.Tx.
func (t *txn) JobCountActiveByHandler(ctx context.Context, handler string) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Jobs+" WHERE handler = ? AND status IN ('pending', 'processing')", handler).Scan(&n)
	return n, err
}

// JobList implements driver.Tx.
func (t *txn) JobList(ctx context.Context, f driver.JobFilter) ([]*driver.Job, error) {
	var conds []string
	var args []any
	add := func(cond string, v any) { conds = append(conds, cond); args = append(args, v) }
	if f.Queue != "" {
		add("queue = ?", f.Queue)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.Handler != "" {
		add("handler = ?", f.Handler)
	}
	if f.WorkflowID != 0 {
		add("workflow_id = ?", f.WorkflowID)
	}
	if f.BatchID != 0 {
		add("batch_id = ?", f.BatchID)
	}
	if f.AfterID != 0 {
		add("id > ?", f.AfterID)
	}
	cols := jobCols
	if f.WithoutPayload {
		cols = jobColsWithoutPayload
	}
	q := "SELECT " + cols + " FROM " + t.s.T.Jobs
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	return t.queryJobs(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
}

// JobDeleteFinished implements driver.Tx.
func (t *txn) JobDeleteFinished(ctx context.Context, before time.Time, limit int) (int64, error) {
	q := "DELETE FROM " + t.s.T.Jobs + " WHERE id IN (SELECT id FROM (SELECT id FROM " + t.s.T.Jobs +
		" WHERE status = 'completed' AND completed_at < ? ORDER BY id LIMIT ?) AS old)"
	res, err := t.tx.ExecContext(ctx, q, t.sec(before), limit)
	if err != nil {
		return 0, fmt.Errorf("purge jobs: %w", err)
	}
	return res.RowsAffected()
}
