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

// queries holds the statements that do not depend on arguments.
type queries struct {
	jobByID, jobsUpdate, wfByID, wfUpdate string
}

func buildQueries(t Tables, d Dialect) queries {
	return queries{
		jobByID: "SELECT " + jobCols + " FROM " + t.Jobs + d.ByID + " WHERE id = ?",
		jobsUpdate: "UPDATE " + t.Jobs + d.ByID + " SET payload_hash = ?, priority = ?, status = ?, attempts = ?, " +
			"max_attempts = ?, available_at = ?, reserved_at = ?, completed_at = ?, failed_at = ?, error_message = ?, " +
			"workflow_id = ?, step_index = ?, depends_on = ?, heartbeat_data = ?, claim_token = ?, " +
			"schedule_to_start_at = ?, start_to_close_at = ?, schedule_to_close_at = ?, heartbeat_deadline_at = ?, " +
			"last_heartbeat_at = ? WHERE id = ?",
		wfByID: "SELECT " + workflowCols + " FROM " + t.Workflows + " WHERE id = ?",
		wfUpdate: "UPDATE " + t.Workflows + " SET status = ?, state = ?, current_step = ?, total_steps = ?, " +
			"completed_at = ?, failed_at = ?, error_message = ?, deadline_at = ?, run_number = ?, run_started_at = ?, " +
			"run_deadline_at = ?, wait_deadline_at = ? WHERE id = ?",
	}
}

// txn implements driver.Tx.
type txn struct {
	s  *Store
	tx *sql.Tx
}

func (t *txn) lock(m driver.LockMode) string {
	switch m {
	case driver.LockUpdate:
		return t.s.D.ForUpdate
	case driver.LockSkipLocked:
		return t.s.D.SkipLocked
	}
	return ""
}

// sec and frac convert times for second- and microsecond-precision columns.
func (t *txn) sec(v time.Time) any {
	if v.IsZero() {
		return nil
	}
	return t.s.D.Time(v.UTC().Truncate(time.Second), false)
}

func (t *txn) frac(v time.Time) any {
	if v.IsZero() {
		return nil
	}
	return t.s.D.Time(v.UTC(), true)
}

func nullID(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullIntp(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullInt64p(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

func idArgs(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// queryAll runs q and scans every row it returns with scan.
func queryAll[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	return queryAllWith(ctx, tx.QueryContext, scan, q, args...)
}

// queryAllWith is queryAll through query.
func queryAllWith[T any](ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, scanError{err}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// queryOne reads the row a by-id query q returns for id; a missing row is
// driver.ErrNotFound, reported as "<what> <id>".
func queryOne[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), what string, id int64, q string) (T, error) {
	v, err := scan(tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, fmt.Errorf("%s %d: %w", what, id, driver.ErrNotFound)
	}
	return v, err
}

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
			if err := t.JobInsert(ctx, part); err != nil {
				return err
			}
			jobs = jobs[len(part):]
		}
		return nil
	}
	const cols = "queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, available_at, " +
		"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units, created_at, " +
		"schedule_to_start_at, schedule_to_close_at, reserved_at, claim_token, start_to_close_at, heartbeat_deadline_at"
	row := "(" + placeholders(23) + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.s.T.Jobs + " (" + cols + ") VALUES ")
	args := make([]any, 0, len(jobs)*23)
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
		limit := any(nil)
		if j.ConcurrencyLimit > 0 {
			limit = j.ConcurrencyLimit
		}
		status := j.Status
		if status == "" {
			status = driver.JobPending
		}
		args = append(args, j.Queue, j.Handler, string(j.Payload), nullStr(j.PayloadHash), int(j.Priority), string(status),
			j.Attempts, j.MaxAttempts, t.sec(j.AvailableAt), nullID(j.WorkflowID), nullIntp(j.StepIndex), nullID(j.DependsOn),
			nullID(j.BatchID), nullStr(j.ConcurrencyGroup), limit, j.CostUnits, t.sec(j.CreatedAt),
			t.frac(j.ScheduleToStartAt), t.frac(j.ScheduleToCloseAt), t.sec(j.ReservedAt), nullID(j.ClaimToken),
			t.frac(j.StartToCloseAt), t.frac(j.HeartbeatDeadline))
	}
	res, err := t.tx.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	ids, err := t.s.D.InsertIDs(res, len(jobs))
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	for i, j := range jobs {
		j.ID = ids[i]
		j.Status = status(j.Status)
	}
	return nil
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
	q := "SELECT " + jobCols + " FROM " + t.s.T.Jobs + t.s.D.ByID + " WHERE id IN (" + placeholders(len(ids)) + ") ORDER BY id" + t.lock(lock)
	return t.queryJobs(ctx, q, idArgs(ids)...)
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

// claimArgs are the arguments of Statements.ClaimWith and
// Statements.HasDueWith, without ClaimWith's limit.
func (t *txn) claimArgs(p driver.ClaimParams) []any {
	args := []any{p.Queue, t.sec(p.Now.Truncate(time.Second))}
	for _, h := range p.Handlers {
		args = append(args, h)
	}
	args = append(args, p.Queue)
	for _, g := range p.ExcludeGroups {
		args = append(args, g)
	}
	if p.CapCost {
		args = append(args, max(p.MaxCost, 0))
	}
	return args
}

// JobClaim implements driver.Tx.
func (t *txn) JobClaim(ctx context.Context, p driver.ClaimParams) ([]*driver.Job, error) {
	if p.Limit <= 0 || len(p.Handlers) == 0 {
		return nil, nil
	}
	jobs, err := t.claimRows(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	in, inArgs := t.inIDs(ids)
	// MySQL assigns left to right, each expression seeing the columns
	// set before it: claim_token comes first, so both stores compute it
	// from the attempts before the claim.
	upd := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET status = 'processing', reserved_at = ?, claim_token = ? + " + nextAttempt +
		", attempts = " + nextAttempt + " WHERE id IN (" + in + ") AND status = 'pending'"
	res, err := t.execHot(ctx, upd, append([]any{t.sec(p.Now), p.Token}, inArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("claim update: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && int(n) != len(ids) {
		return nil, fmt.Errorf("claim update: changed %d of %d locked rows", n, len(ids))
	}
	for _, j := range jobs {
		j.Status = driver.JobProcessing
		j.ReservedAt = p.Now.UTC().Truncate(time.Second)
		j.Attempts = min(j.Attempts+1, attemptsMax)
		j.ClaimToken = p.Token + int64(j.Attempts)
	}
	return jobs, nil
}

// attemptsMax is the largest value of the jobs table's attempts column
// (Queuety's TINYINT UNSIGNED; the SQLite schema checks the same range).
const attemptsMax = 255

// nextAttempt is a claimed row's new attempts value: one more, but never
// past attemptsMax. A row already at the limit (written by Queuety PHP, by
// hand, or by an engine that let max_attempts exceed the column) would
// otherwise make the claim's UPDATE fail with an out-of-range error, and
// with it every claim of the queue; clamped, it is claimed, and its
// attempt fails into burial because no limit exceeds attemptsMax.
var nextAttempt = fmt.Sprintf("CASE WHEN attempts < %d THEN attempts + 1 ELSE %d END", attemptsMax, attemptsMax)

// claimRows locks and reads up to p.Limit claimable rows. With
// Dialect.TwoStepClaim it locks the candidates a plain read found; when
// other claims took all of them meanwhile, it falls back to the locking
// scan, which skips the rows they hold.
func (t *txn) claimRows(ctx context.Context, p driver.ClaimParams) ([]*driver.Job, error) {
	h, g := len(p.Handlers), len(p.ExcludeGroups)
	where := t.claimArgs(p)
	args := append(where[:len(where):len(where)], p.Limit)
	if len(p.IDs) > 0 {
		_, idArgs := t.inIDs(p.IDs)
		jobs, err := queryAllWith(ctx, t.queryHot, newJobScanner().scan, t.s.SQL.ClaimByID(len(idArgs), h, g, p.CapCost)+t.s.D.SkipLocked,
			append(idArgs, where...)...)
		if err != nil {
			return nil, fmt.Errorf("claim by id: %w", err)
		}
		return jobs[:min(len(jobs), p.Limit)], nil
	}
	if t.s.D.TwoStepClaim {
		ids, err := queryAllWith(ctx, t.queryHot, scanID, t.s.SQL.ClaimCandidates(h, g, p.CapCost), args...)
		if err != nil {
			return nil, fmt.Errorf("claim candidates: %w", err)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		_, idArgs := t.inIDs(ids)
		jobs, err := queryAllWith(ctx, t.queryHot, newJobScanner().scan, t.s.SQL.ClaimByID(len(idArgs), h, g, p.CapCost)+t.s.D.SkipLocked,
			append(idArgs, where...)...)
		if err != nil {
			return nil, fmt.Errorf("claim candidates by id: %w", err)
		}
		if len(jobs) > 0 {
			return jobs, nil
		}
	}
	jobs, err := queryAllWith(ctx, t.queryHot, newJobScanner().scan, t.s.SQL.ClaimWith(h, g, p.CapCost)+t.s.D.SkipLocked, args...)
	if err != nil {
		return nil, fmt.Errorf("claim select: %w", err)
	}
	return jobs, nil
}

// scanID scans a row of one id.
func scanID(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }

// JobClaimCandidates implements driver.Tx.
func (t *txn) JobClaimCandidates(ctx context.Context, p driver.ClaimParams) ([]int64, error) {
	if p.Limit <= 0 || len(p.Handlers) == 0 {
		return nil, nil
	}
	where := t.claimArgs(p)
	ids, err := queryAll(ctx, t.tx, scanID, t.s.SQL.ClaimCandidates(len(p.Handlers), len(p.ExcludeGroups), p.CapCost), append(where, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("claim candidates: %w", err)
	}
	return ids, nil
}

// JobBuryUnclaimable implements driver.Tx.
func (t *txn) JobBuryUnclaimable(ctx context.Context, id int64, msg string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.Jobs+t.s.D.ByID+" SET status = 'buried', failed_at = ?, error_message = ?, "+
		"reserved_at = NULL, claim_token = NULL WHERE id = ? AND status = 'pending'", t.sec(at), msg, id)
	if err != nil {
		return false, fmt.Errorf("bury unclaimable job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// JobHasDue implements driver.Tx.
func (t *txn) JobHasDue(ctx context.Context, p driver.ClaimParams) (bool, error) {
	if len(p.Handlers) == 0 {
		return false, nil
	}
	var one int
	err := t.tx.QueryRowContext(ctx, t.s.SQL.HasDueWith(len(p.Handlers), len(p.ExcludeGroups), p.CapCost), t.claimArgs(p)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}

// completeSet marks jobs completed (completed_at is the one argument) and
// clears their activity deadlines.
const completeSet = " SET status = 'completed', completed_at = ?, start_to_close_at = NULL, " +
	"heartbeat_deadline_at = NULL, schedule_to_start_at = NULL, schedule_to_close_at = NULL "

// JobComplete implements driver.Tx.
func (t *txn) JobComplete(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + completeSet +
		"WHERE id IN (" + placeholders(len(ids)) + ") AND status IN ('pending', 'processing')"
	if _, err := t.tx.ExecContext(ctx, q, append([]any{t.sec(at)}, idArgs(ids)...)...); err != nil {
		return fmt.Errorf("complete jobs: %w", err)
	}
	return nil
}

// JobCompleteClaimed implements driver.Tx.
func (t *txn) JobCompleteClaimed(ctx context.Context, ids []int64, token int64, attempts int, at time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	in, inArgs := t.inIDs(ids)
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + completeSet +
		"WHERE id IN (" + in + ") AND status = 'processing' AND claim_token = ? AND attempts = ?"
	args := append([]any{t.sec(at)}, inArgs...)
	res, err := t.execHot(ctx, q, append(args, token, attempts)...)
	if err != nil {
		return 0, fmt.Errorf("complete claimed jobs: %w", err)
	}
	return res.RowsAffected()
}

// JobTouch implements driver.Tx.
func (t *txn) JobTouch(ctx context.Context, ids []int64, token int64, at time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET reserved_at = ? WHERE id IN (" + placeholders(len(ids)) + ") AND status = 'processing' AND claim_token = ?"
	args := append([]any{t.sec(at)}, idArgs(ids)...)
	res, err := t.tx.ExecContext(ctx, q, append(args, token)...)
	if err != nil {
		return 0, fmt.Errorf("renew leases: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// JobFindStale implements driver.Tx.
func (t *txn) JobFindStale(ctx context.Context, p driver.StaleParams) ([]*driver.Job, error) {
	leaseBefore := p.LeaseBefore
	if leaseBefore.IsZero() || leaseBefore.Before(p.ReservedBefore) {
		leaseBefore = p.ReservedBefore
	}
	unreserved, err := t.queryJobs(ctx, t.s.SQL.StaleUnreserved+t.lock(p.Lock), p.Limit)
	if err != nil || len(unreserved) >= p.Limit {
		return unreserved, err
	}
	claimed, err := t.queryJobs(ctx, t.s.SQL.Stale+t.lock(p.Lock), t.sec(leaseBefore), t.sec(p.ReservedBefore), p.Limit-len(unreserved))
	return append(unreserved, claimed...), err
}

// JobFindTimedOut implements driver.Tx. Each deadline column has its own
// index and is NULL unless the deadline is armed, so every read touches
// only expired entries.
func (t *txn) JobFindTimedOut(ctx context.Context, p driver.TimedOutParams) ([]*driver.Job, error) {
	var ids []int64
	for _, q := range t.s.SQL.TimedOut {
		got, err := t.ids(ctx, q, t.frac(p.Now), p.Limit)
		if err != nil {
			return nil, fmt.Errorf("find timed-out jobs: %w", err)
		}
		ids = mergeByID(ids, got, idOf, p.Limit)
	}
	return t.JobGetMany(ctx, ids, p.Lock)
}

// ids runs a query that returns one id column.
func (t *txn) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	return queryAll(ctx, t.tx, scanID, q, args...)
}

// mergeByID appends the elements of b whose id is not already in a, up to
// limit elements in total.
func mergeByID[T any](a, b []T, id func(T) int64, limit int) []T {
	seen := make(map[int64]bool, len(a))
	for _, v := range a {
		seen[id(v)] = true
	}
	for _, v := range b {
		if len(a) >= limit {
			break
		}
		if !seen[id(v)] {
			seen[id(v)] = true
			a = append(a, v)
		}
	}
	return a
}

// idOf is mergeByID's id for plain ids.
func idOf(id int64) int64 { return id }

// JobListByWorkflow implements driver.Tx.
func (t *txn) JobListByWorkflow(ctx context.Context, wfID int64, statuses []driver.JobStatus, lock driver.LockMode) ([]*driver.Job, error) {
	q := "SELECT " + jobCols + " FROM " + t.s.T.Jobs + t.s.D.ByWorkflow + " WHERE workflow_id = ?"
	args := []any{wfID}
	if len(statuses) > 0 {
		q += " AND status IN (" + placeholders(len(statuses)) + ")"
		for _, s := range statuses {
			args = append(args, string(s))
		}
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

// JobCounts implements driver.Tx.
func (t *txn) JobCounts(ctx context.Context) ([]driver.QueueCount, error) {
	return t.queueCounts(ctx, "")
}

// queueCounts counts jobs by queue and status, filtered by where ("" or
// " WHERE ..." with its args).
func (t *txn) queueCounts(ctx context.Context, where string, args ...any) ([]driver.QueueCount, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT queue, status, COUNT(*) FROM "+t.s.T.Jobs+where+" GROUP BY queue, status ORDER BY queue, status", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QueueCount
	for rows.Next() {
		var c driver.QueueCount
		var s string
		if err := rows.Scan(&c.Queue, &s, &c.Count); err != nil {
			return nil, err
		}
		c.Status = driver.JobStatus(s)
		out = append(out, c)
	}
	return out, rows.Err()
}

// JobOldestDue implements driver.Tx.
func (t *txn) JobOldestDue(ctx context.Context, queue string, now time.Time) (time.Time, error) {
	var due time.Time
	err := t.tx.QueryRowContext(ctx, t.s.SQL.OldestDue, queue, t.sec(now)).Scan(nullTime{&due})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest due job: %w", err)
	}
	return due, nil
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

// QueueSetPaused implements driver.Tx. Pausing writes a queue_states row
// and resuming deletes it, as Queuety does.
func (t *txn) QueueSetPaused(ctx context.Context, queue string, paused bool, at time.Time) error {
	if !paused {
		_, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.QueueStates+" WHERE queue = ?", queue)
		return err
	}
	res, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.QueueStates+" SET paused = 1, paused_at = ? WHERE queue = ?", t.sec(at), queue)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 { // matched rows: see Dialect
		return err
	}
	_, err = t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.QueueStates+" (queue, paused, paused_at) VALUES (?, 1, ?)", queue, t.sec(at))
	if err != nil && t.s.D.Duplicate(err) {
		return nil
	}
	return err
}

// QueueStates implements driver.Tx.
func (t *txn) QueueStates(ctx context.Context) ([]driver.QueueState, error) {
	rows, err := t.tx.QueryContext(ctx, "SELECT queue, paused, paused_at FROM "+t.s.T.QueueStates+" ORDER BY queue")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QueueState
	for rows.Next() {
		var s driver.QueueState
		var paused int
		if err := rows.Scan(&s.Queue, &paused, nullTime{&s.PausedAt}); err != nil {
			return nil, err
		}
		s.Paused = paused != 0
		out = append(out, s)
	}
	return out, rows.Err()
}

// LogInsert implements driver.Tx.
func (t *txn) LogInsert(ctx context.Context, entries []*driver.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	// Most batches are plain jobs' 'started' and 'completed' rows: no
	// workflow, no error, no memory, no context. Those are inserted with
	// the empty columns written as NULL in the statement (7 values a row
	// instead of 14); a batch with any other row is inserted whole, in
	// order, with every column.
	plain, full := entries, []*driver.LogEntry(nil)
	for _, l := range entries {
		if l.WorkflowID != 0 || l.StepIndex != nil || l.MemoryPeakKB != nil || l.ErrorMessage != "" ||
			l.ErrorClass != "" || l.ErrorTrace != "" || len(l.Context) != 0 {
			plain, full = nil, entries
			break
		}
	}
	var box argBoxes
	const head = " (job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, " +
		"memory_peak_kb, error_message, error_class, error_trace, context, created_at) VALUES "
	for _, part := range []struct {
		rows []*driver.LogEntry
		row  string
		cols int
		vals func(args []any, l *driver.LogEntry, q string) []any
	}{
		{plain, "(?,NULL,NULL,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,?)", 7, func(args []any, l *driver.LogEntry, q string) []any {
			return append(args, nullInt64p(l.JobID), box.str(l.Handler), box.str(q), box.str(string(l.Event)), nullIntp(l.Attempt),
				nullInt64p(l.DurationMS), box.sec(t, l.CreatedAt))
		}},
		{full, "(" + placeholders(14) + ")", 14, func(args []any, l *driver.LogEntry, q string) []any {
			return append(args, nullInt64p(l.JobID), nullID(l.WorkflowID), nullIntp(l.StepIndex), l.Handler, q, string(l.Event),
				nullIntp(l.Attempt), nullInt64p(l.DurationMS), nullInt64p(l.MemoryPeakKB), nullStr(l.ErrorMessage),
				nullStr(truncate(l.ErrorClass, 255)), nullStr(truncate(l.ErrorTrace, 65000)), nullText(l.Context), t.sec(l.CreatedAt))
		}},
	} {
		rows := part.rows
		if len(rows) == 0 {
			continue
		}
		for _, k := range t.chunks(len(rows)) {
			args := make([]any, 0, k*part.cols)
			for _, l := range rows[:k] {
				q := l.Queue
				if q == "" {
					q = driver.DefaultQueue
				}
				args = part.vals(args, l, q)
			}
			q := t.s.rowsInsert.get("INSERT INTO "+t.s.T.Logs+head, part.row, k)
			if _, err := t.execHot(ctx, q, args...); err != nil {
				return fmt.Errorf("insert logs: %w", err)
			}
			rows = rows[k:]
		}
	}
	return nil
}

// argBoxes reuses the argument values of a batch's rows: most rows of a
// batch share their handler, queue, event and second, and each value
// handed to database/sql as an interface is otherwise a new allocation.
type argBoxes struct {
	strs [4]struct {
		s string
		v any
	}
	next  int
	at    time.Time
	atArg any
}

func (b *argBoxes) str(s string) any {
	for i := range b.strs {
		if e := &b.strs[i]; e.v != nil && e.s == s {
			return e.v
		}
	}
	e := &b.strs[b.next]
	b.next = (b.next + 1) % len(b.strs)
	e.s, e.v = s, s
	return e.v
}

func (b *argBoxes) sec(t *txn, at time.Time) any {
	if s := at.Truncate(time.Second); b.atArg == nil || !s.Equal(b.at) {
		b.at, b.atArg = s, t.sec(at)
	}
	return b.atArg
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// LogList implements driver.Tx.
func (t *txn) LogList(ctx context.Context, f driver.LogFilter) ([]*driver.LogEntry, error) {
	where, args := t.logWhere(f)
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	order := " ORDER BY id LIMIT ?"
	switch {
	case f.Newest:
		order = " ORDER BY id DESC LIMIT ?"
	case f.ByTime:
		order = " ORDER BY created_at, id LIMIT ?"
	}
	cols := logCols
	if n := f.MaxTextBytes; n > 0 {
		cols = cappedLogCols(n)
	}
	return queryAll(ctx, t.tx, scanLog, "SELECT "+cols+" FROM "+t.s.T.Logs+where+order, append(args, limit)...)
}

// logWhere returns the WHERE clause (or "") and arguments of a LogFilter.
func (t *txn) logWhere(f driver.LogFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) { conds, args = append(conds, cond), append(args, v) }
	if f.JobID != 0 {
		add("job_id = ?", f.JobID)
	}
	if len(f.JobIDs) > 0 {
		conds = append(conds, "job_id IN ("+placeholders(len(f.JobIDs))+")")
		args = append(args, idArgs(f.JobIDs)...)
	}
	if f.WorkflowID != 0 {
		add("workflow_id = ?", f.WorkflowID)
	}
	if f.Handler != "" {
		add("handler = ?", f.Handler)
	}
	if f.Event != "" {
		add("event = ?", string(f.Event))
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", t.sec(f.Since))
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
