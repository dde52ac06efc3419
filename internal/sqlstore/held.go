package sqlstore

// This file holds the held claim (driver.HeldClaimer): due plain jobs
// locked, not changed, while their handlers run, and each one's outcome
// written once in the same transaction.

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// HoldSession holds the statements that bound a held transaction's idle
// time on its connection: Set (with %d, whole seconds) before it begins,
// Reset after it ends, so the connection goes back to the pool as it was.
// The server rolls back a transaction idle for longer and closes the
// connection, which releases the rows of a stopped process.
type HoldSession struct {
	Set, Reset string
}

// heldOnly narrows a claim to the jobs a held claim may take: plain jobs
// (no workflow, batch or concurrency group) without activity deadlines
// and without the payload keys that carry runtime options, a chain's
// catch handler or a batch callback.
const heldOnly = " AND job.workflow_id IS NULL AND job.batch_id IS NULL AND job.concurrency_group IS NULL" +
	" AND job.schedule_to_start_at IS NULL AND job.schedule_to_close_at IS NULL AND job.start_to_close_at IS NULL" +
	" AND job.heartbeat_deadline_at IS NULL AND INSTR(job.payload, '\"__queuety_') = 0 AND INSTR(job.payload, '\"__chain_') = 0"

// HoldsClaims implements driver.HeldClaimer: not while the held claims'
// journal table is missing (a store opened without migrating on an older
// schema; looked for again with MaintenanceDue's other tables).
func (s *Store) HoldsClaims() bool { return s.D.Hold != nil && !s.due.get().noHeld }

// InHeldTx implements driver.HeldClaimer.
func (s *Store) InHeldTx(ctx context.Context, idle time.Duration, fn func(driver.HeldTx) error) error {
	if s.D.Hold == nil {
		return errors.New("held claim: the store cannot hold claims")
	}
	if s.stmts != nil && s.stmts.hasWanted() {
		s.stmts.prepareWanted(ctx, s.DB)
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("held claim: connection: %w", err)
	}
	defer conn.Close()
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), s.D.Hold.Reset); err != nil {
			// The connection may keep the short timeout: close it.
			_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		}
	}()
	secs := max(int64((idle+time.Second-1)/time.Second), 1)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(s.D.Hold.Set, secs)); err != nil {
		return fmt.Errorf("held claim: set idle timeout: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("held claim: begin: %w", err)
	}
	note := jobnote.Of(ctx)
	mark := note.Mark()
	if err := fn(&txn{s: s, tx: tx}); err != nil {
		_ = tx.Rollback()
		note.Rewind(mark) // nothing of it was written (see Store.InTx)
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("held claim: %w: %w", ErrCommitUnknown, err)
	}
	return nil
}

// JobLockHeld implements driver.HeldTx with the claim's locking scan:
// a plain read of candidates first (Dialect.TwoStepClaim) would return
// the rows this process's other held claims hold, which read pending.
func (t *txn) JobLockHeld(ctx context.Context, p driver.ClaimParams) ([]*driver.Job, error) {
	if p.Limit <= 0 || len(p.Handlers) == 0 {
		return nil, nil
	}
	args := append(t.claimArgs(driver.ClaimParams{Queue: p.Queue, Now: p.Now, Handlers: p.Handlers}), p.Limit)
	jobs, err := queryAllWith(ctx, t.queryHot, newJobScanner().scan, t.s.SQL.Held(len(p.Handlers))+t.s.D.SkipLocked, args...)
	if err != nil {
		return nil, fmt.Errorf("held claim lock: %w", err)
	}
	return jobs, nil
}

// JobClaimHeld implements driver.HeldTx with the claim's UPDATE.
func (t *txn) JobClaimHeld(ctx context.Context, ids []int64, token int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, inArgs := t.inIDs(ids)
	upd := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + " SET status = 'processing', reserved_at = ?, claim_token = " + t.s.D.bigParam() + " + " + nextAttempt +
		", attempts = " + nextAttempt + " WHERE id IN (" + in + ") AND status = 'pending'"
	res, err := t.execHot(ctx, upd, append([]any{t.sec(at), token}, inArgs...)...)
	if err != nil {
		return fmt.Errorf("held claim: claim update: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && int(n) != len(ids) {
		return fmt.Errorf("held claim: claim update changed %d of %d locked rows", n, len(ids))
	}
	return nil
}

// JobCompleteHeld implements driver.HeldTx: the claim's columns and the
// completion's in one UPDATE. MySQL assigns left to right, so claim_token
// is computed from the attempts before the claim, as in the claim.
func (t *txn) JobCompleteHeld(ctx context.Context, ids []int64, token int64, claimedAt, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, inArgs := t.inIDs(ids)
	upd := "UPDATE " + t.s.T.Jobs + t.s.D.ByID + completeSet + ", reserved_at = ?, claim_token = " + t.s.D.bigParam() + " + " + nextAttempt +
		", attempts = " + nextAttempt + " WHERE id IN (" + in + ") AND status = 'pending'"
	res, err := t.execHot(ctx, upd, append([]any{t.sec(at), t.sec(claimedAt), token}, inArgs...)...)
	if err != nil {
		return fmt.Errorf("held claim: complete: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && int(n) != len(ids) {
		return fmt.Errorf("held claim: completion changed %d of %d locked rows", n, len(ids))
	}
	return t.completed(ctx, ids)
}
