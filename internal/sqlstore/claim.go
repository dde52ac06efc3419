package sqlstore

// This file holds the claim of due jobs and what follows it: completing
// claimed jobs, renewing their leases, and finding the stale and timed-out
// ones the sweeps recover.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

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
	if t.s.D.ClaimReturning && len(p.IDs) == 0 {
		return t.claimReturning(ctx, p)
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
	upd := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET status = 'processing', reserved_at = ?, claim_token = " + t.s.D.bigParam() + " + " + nextAttempt +
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

// claimReturning claims in one statement (Dialect.ClaimReturning) and
// puts the claimed rows in the claim's order, which RETURNING does not
// keep.
func (t *txn) claimReturning(ctx context.Context, p driver.ClaimParams) ([]*driver.Job, error) {
	args := append(slices.Clip(t.s.D.ClaimOptions), t.claimArgs(p)...)
	args = append(args, p.Limit, t.sec(p.Now), p.Token)
	jobs, err := queryAllWith(ctx, t.queryHot, newJobScanner().scan,
		t.s.SQL.ClaimReturning(len(p.Handlers), len(p.ExcludeGroups), p.CapCost), args...)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	slices.SortFunc(jobs, func(a, b *driver.Job) int {
		if a.Priority != b.Priority {
			return cmp.Compare(b.Priority, a.Priority)
		}
		if c := a.AvailableAt.Compare(b.AvailableAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(jobs) == 0 {
		return nil, nil
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

// JobCompleteClaimed implements driver.Tx.
func (t *txn) JobCompleteClaimed(ctx context.Context, ids []int64, token int64, attempts int, at time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	in, inArgs := t.idsIn("id", ids, true)
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + completeSet +
		"WHERE " + in + " AND " + t.s.D.processingByID() + " AND claim_token = ? AND attempts = ?"
	args := append([]any{t.sec(at)}, inArgs...)
	res, err := t.execHot(ctx, q, append(args, token, attempts)...)
	if err != nil {
		return 0, fmt.Errorf("complete claimed jobs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	// Some of ids may be stale (n < len(ids)): their dependents, if
	// any, are not claimable, so noting them wakes a worker for nothing
	// at worst, and the caller rolls such a completion back anyway.
	return n, t.completed(ctx, ids)
}

// JobTouch implements driver.Tx.
func (t *txn) JobTouch(ctx context.Context, ids []int64, token int64, at time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET reserved_at = ? WHERE id IN (" + placeholders(len(ids)) + ") AND " + t.s.D.processingByID() + " AND claim_token = ?"
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
