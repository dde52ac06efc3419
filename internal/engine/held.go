package engine

// A held claim locks due plain jobs without claiming them, runs their
// handlers while the transaction stays open, and records each job's
// outcome with one write in that transaction: a completed job changes its
// status once (pending to completed) instead of twice. The row lock is
// the claim's fence: other claims (Go's and Queuety PHP's, both FOR
// UPDATE SKIP LOCKED) skip the rows, and if the transaction ends without
// a commit (a lost connection, the server's idle timeout, a failed
// commit) nothing of it is written and the jobs are pending again with
// their attempts unchanged, to be run again (at least once). The held
// claims that an engine's workers make at the same time share one
// transaction (heldcombine.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// CanHold reports whether the store can hold claims (ClaimHeld).
func (e *Engine) CanHold() bool {
	hs, ok := e.store.(driver.HeldClaimer)
	return ok && hs.HoldsClaims()
}

// NoHoldReason returns why the store cannot hold claims, or "" when it
// can (CanHold).
func (e *Engine) NoHoldReason() string {
	if e.CanHold() {
		return ""
	}
	if r, ok := e.store.(driver.HeldClaimsRefuser); ok {
		if why := r.NoHeldClaims(); why != "" {
			return why
		}
	}
	return "the store cannot hold claims (MySQL and MariaDB only)"
}

// HeldParams are the settings of a held claim.
type HeldParams struct {
	// Bound is how long after the locking scan the transaction writes at
	// the latest: Due is closed then, and a share not ended half a bound
	// later is claimed whole (Settle).
	Bound time.Duration
	// Idle is how long the server may leave the transaction idle before
	// it rolls it back and closes the connection.
	Idle time.Duration
	// Holder names the claiming worker, the same value on each of its
	// claims: a turn waits a moment for the workers whose shares are
	// being written to claim with it (nil: waited for by nobody).
	Holder any
	// Together, when more than one, makes a turn wait until that many
	// claims are queued for it (the tests' way to put several workers in
	// one transaction); 0 in use.
	Together int
}

// Held is a held claim, one worker's share of a held transaction: Jobs
// are locked in an open transaction, still pending in the table, and look
// to their handlers as claimed (attempt, claim token). Settle or Rollback
// ends it; one of them must be called.
type Held struct {
	Jobs []*Claimed
	tx   *heldTx
	// end is the share's outcome once ended; late is set when the
	// transaction wrote without it and claimed its jobs (under tx.mu).
	end  *heldEnd
	late bool
}

// heldEnd is what ends a share: the writes of Settle, or a rollback.
type heldEnd struct {
	completed []*Result
	convert   []*Claimed
	rollback  bool
}

// errHeldRollback ends a held transaction without writing anything.
var errHeldRollback = errors.New("held claim rolled back")

// ClaimHeld locks up to req.Limit due plain jobs of req.Queues (see
// driver.HeldTx.JobLockHeld for which) in a transaction it leaves open,
// on a connection the server rolls back when it stays idle for longer
// than p.Idle. Claims of several workers made at the same time share one
// transaction and one locking scan. req.Admission is not consulted: a
// caller holds claims only under a plain admission. It returns nil when
// nothing was locked.
func (e *Engine) ClaimHeld(ctx context.Context, req ClaimRequest, p HeldParams) (*Held, error) {
	hs, ok := e.store.(driver.HeldClaimer)
	if !ok || !hs.HoldsClaims() || req.Limit <= 0 || len(req.Handlers) == 0 {
		return nil, nil
	}
	return e.held.claim(context.WithoutCancel(ctx), e, hs, req, p) // the transaction outlives the claim loop's context
}

// lockHeld locks the held transaction's rows, queue by queue, and
// prepares them as the claim would (claimIn).
func (e *Engine) lockHeld(ctx context.Context, tx driver.HeldTx, req ClaimRequest, t *heldTx) ([]*Claimed, error) {
	now := e.clock.Now()
	t.claimedAt = now
	var out []*Claimed
	for _, q := range req.Queues {
		jobs, err := tx.JobLockHeld(ctx, driver.ClaimParams{Queue: q, Handlers: req.Handlers, Limit: req.Limit - len(out), Now: now})
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			t.journal = append(t.journal, driver.HeldJob{ID: j.ID, Attempts: j.Attempts})
			// The row as the claim's UPDATE would leave it.
			j.Status = driver.JobProcessing
			j.ReservedAt = now.UTC().Truncate(time.Second)
			j.Attempts = min(j.Attempts+1, 255)
			j.ClaimToken = t.token + int64(j.Attempts)
			out = append(out, newClaimed(j, now))
		}
		if len(out) >= req.Limit {
			break
		}
	}
	return out, nil
}

// settleHeld writes a held transaction's outcome in it: the converted
// jobs claimed as the claim does, the completed ones with the claim's and
// the completion's columns in one UPDATE and the log rows, batch and
// compensation writes of CompleteJobs, noting the jobs it makes claimable
// (their dependents) in ctx as CompleteJobs does.
func (e *Engine) settleHeld(ctx context.Context, tx driver.HeldTx, t *heldTx, end heldEnd) error {
	now := e.clock.Now()
	if len(end.convert) > 0 {
		ids := make([]int64, len(end.convert))
		for i, cj := range end.convert {
			ids[i] = cj.Job.ID
		}
		if err := tx.JobClaimHeld(ctx, ids, t.token, now); err != nil {
			return err
		}
	}
	if len(end.completed) == 0 {
		return nil
	}
	ids := make([]int64, len(end.completed))
	logs := make([]*driver.LogEntry, 0, 2*len(end.completed))
	for i, r := range end.completed {
		ids[i] = r.Claimed.Job.ID
		logs = append(logs, completedLogs(r, now)...)
	}
	if err := tx.JobCompleteHeld(ctx, ids, t.token, t.claimedAt, now); err != nil {
		return err
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return err
	}
	if err := e.batchJobsCompleted(ctx, tx, end.completed, now); err != nil {
		return err
	}
	return e.compensationsEnded(ctx, tx, end.completed, now)
}

// Due is closed when the bound has passed since the locking scan: the
// caller settles then with what it has.
func (h *Held) Due() <-chan struct{} { return h.tx.due }

// Settle ends the share: completed (successful attempts of its jobs)
// become completed, convert (jobs whose handlers still run, or failed
// attempts the caller records with Finish next) become claimed as Claim
// claims, with their held claim token, in the transaction, which commits
// once every share of it has ended. On an error nothing was written (or,
// when the commit's outcome is unknown, perhaps all of it): the jobs are
// pending again and run again.
//
// claimed reports that the transaction did not wait for this share (it
// had not ended half a bound after Due) and claimed all its jobs as Claim
// claims: nothing of completed and convert was written, and the caller
// records each outcome, and hands back its unused jobs, the normal way.
func (h *Held) Settle(completed []*Result, convert []*Claimed) (claimed bool, err error) {
	claimed, err = h.tx.end(h, heldEnd{completed: completed, convert: convert})
	if err != nil {
		return claimed, fmt.Errorf("queuety: settle held claim: %w", err)
	}
	if !claimed {
		setCompleted(completed, make([]error, len(completed)))
	}
	return claimed, nil
}

// Rollback ends the share without writing anything: its jobs are pending
// again, their attempts unchanged, once the transaction ends. claimed
// reports that the transaction had already claimed them (see Settle): the
// caller hands them back the normal way.
func (h *Held) Rollback() (claimed bool) {
	claimed, err := h.tx.end(h, heldEnd{rollback: true})
	return claimed && err == nil
}
