package engine

// The journal of held transactions: a held transaction that never ends
// with an outcome its process learns (the process crashed, or lost its
// connection and died) counts an attempt for each of its jobs, as a
// normal claim whose worker died does. Before the handlers of a held
// transaction run, one row naming its jobs (with their attempts before
// the claim) is written and committed outside it; the commit of the held
// transaction deletes that row, and so does its process once it learns
// that the transaction rolled back. A row left past its expiry is a
// transaction whose process died: stale recovery (RecoverHeldLocked)
// counts one attempt for each of its jobs that is still pending with the
// attempts the row names, not locked, and buries it, as stale recovery
// does, when its attempts are used up. The cost is two statements a held
// transaction (one commit), however many jobs it holds. A write of the row
// that fails on the client may have committed on the server: the store
// then deletes the row by its content (driver.HeldClaimer.JournalHeld),
// and again after its next journal write when that delete failed
// (driver.ErrHeldJournalLeft, logged) or found nothing; only a row still
// there when it expires counts an attempt for its jobs.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// HeldJournalMargin is how long past the latest end of a held transaction
// (its bound, half a bound for a late share, and the server's idle
// timeout) its journal row expires: slow settle statements and commits
// end within it, so stale recovery never reads the row of a transaction
// that may still commit.
const HeldJournalMargin = 30 * time.Second

// journalHeld writes t's journal row: it expires when the server has
// rolled back the transaction for sure.
func (e *Engine) journalHeld(ctx context.Context, hs driver.HeldClaimer, t *heldTx, p HeldParams) error {
	if len(t.journal) == 0 {
		return nil
	}
	expires := e.clock.Now().Add(2*p.Bound + p.Idle + HeldJournalMargin)
	id, err := hs.JournalHeld(ctx, t.journal, expires)
	if errors.Is(err, driver.ErrHeldJournalLeft) {
		e.log.Warn("queuety: held claim journal row may be left after a failed write; the store deletes it again after its next journal write, or stale recovery counts an attempt for its jobs once it expires",
			"jobs", len(t.journal), "err", err)
	}
	if err != nil {
		return err
	}
	t.journalID = id
	return nil
}

// endHeldJournal deletes t's journal row after a rollback (or a commit of
// unknown outcome) its process saw; a row it cannot delete counts an
// attempt for its jobs once it expires.
func (e *Engine) endHeldJournal(ctx context.Context, hs driver.HeldClaimer, t *heldTx) {
	if err := hs.EndHeldJournal(context.WithoutCancel(ctx), t.journalID); err != nil {
		e.log.Warn("queuety: held claim journal row not deleted; stale recovery counts an attempt for its jobs once it expires",
			"jobs", len(t.journal), "err", err)
	}
}

// RecoverHeldLocked counts, in tx, the attempts of the held transactions
// whose journal rows expired (their processes died): of up to limit rows,
// each job still pending with the attempts its row names and not locked
// by another transaction is taken back as stale recovery takes back a
// processing job: one attempt more, retried at once or, when its attempts
// are used up, buried with the stale error. A row is deleted once none of
// its jobs was locked. It returns how many jobs it took back and how many
// rows it deleted (all it read, unless some are kept).
func (e *Engine) RecoverHeldLocked(ctx context.Context, tx driver.Tx, limit int, fail *StaleFailures) (jobs, rows int, err error) {
	jt, ok := tx.(driver.HeldJournalTx)
	if !ok {
		return 0, 0, nil
	}
	now := e.clock.Now()
	entries, err := jt.HeldJournalExpired(ctx, now, limit)
	if err != nil || len(entries) == 0 {
		return 0, 0, err
	}
	var ids []int64
	for _, en := range entries {
		for _, j := range en.Jobs {
			ids = append(ids, j.ID)
		}
	}
	got, err := tx.JobGetMany(ctx, ids, driver.LockSkipLocked)
	if err != nil {
		return 0, 0, fmt.Errorf("held claim journal: jobs: %w", err)
	}
	byID := make(map[int64]*driver.Job, len(got))
	for _, j := range got {
		byID[j.ID] = j
	}
	var missing []int64
	for _, id := range ids {
		if byID[id] == nil {
			missing = append(missing, id)
		}
	}
	locked := map[int64]bool{}
	if len(missing) > 0 { // locked, or deleted since
		there, err := tx.JobGetMany(ctx, missing, driver.LockNone)
		if err != nil {
			return 0, 0, fmt.Errorf("held claim journal: jobs: %w", err)
		}
		for _, j := range there {
			locked[j.ID] = true
		}
	}
	var take []*driver.Job
	var done []int64
	for _, en := range entries {
		keep := false
		for _, hj := range en.Jobs {
			row := byID[hj.ID]
			keep = keep || locked[hj.ID]
			if row == nil || row.Status != driver.JobPending || row.Attempts != hj.Attempts {
				continue // completed, claimed again, counted, or gone
			}
			delete(byID, hj.ID) // once, if two rows name it
			// The row as the held claim would have claimed it.
			row.Status = driver.JobProcessing
			row.ReservedAt = now.UTC().Truncate(time.Second)
			row.Attempts = min(row.Attempts+1, 255)
			take = append(take, row)
		}
		if !keep {
			done = append(done, en.ID)
		}
	}
	if err := e.RecoverStaleLocked(ctx, tx, take, fail); err != nil {
		return 0, 0, err
	}
	if err := jt.HeldJournalDelete(ctx, done); err != nil {
		return 0, 0, err
	}
	return len(take), len(done), nil
}
