package engine

// A held claim locks due plain jobs without claiming them, runs their
// handlers while the transaction stays open, and records each job's
// outcome with one write in that transaction: a completed job changes its
// status once (pending to completed) instead of twice. The row lock is
// the claim's fence: other claims (Go's and Queuety PHP's, both FOR
// UPDATE SKIP LOCKED) skip the rows, and if the transaction ends without
// a commit (a lost connection, the server's idle timeout, a failed
// commit) nothing of it is written and the jobs are pending again with
// their attempts unchanged, to be run again (at least once).

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

// Held is a held claim: Jobs are locked in an open transaction, still
// pending in the table, and look to their handlers as claimed (attempt,
// claim token). Settle or Rollback ends it; one of them must be called.
type Held struct {
	Jobs      []*Claimed
	token     int64
	claimedAt time.Time
	settle    chan heldEnd
	done      chan error
}

// heldEnd is what ends a held claim: the writes of Settle, or a rollback.
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
// than idle. req.Admission is not consulted: a caller holds claims only
// under a plain admission. It returns nil when nothing was locked.
func (e *Engine) ClaimHeld(ctx context.Context, req ClaimRequest, idle time.Duration) (*Held, error) {
	hs, ok := e.store.(driver.HeldClaimer)
	if !ok || !hs.HoldsClaims() || req.Limit <= 0 || len(req.Handlers) == 0 {
		return nil, nil
	}
	ctx = context.WithoutCancel(ctx) // the transaction outlives the claim loop's context
	h := &Held{token: newClaimToken(), settle: make(chan heldEnd), done: make(chan error, 1)}
	ready := make(chan []*Claimed, 1)
	go func() {
		wrote := false
		err := hs.InHeldTx(ctx, idle, func(tx driver.HeldTx) error {
			e.heldScan.Lock()
			jobs, err := e.lockHeld(ctx, tx, req, h)
			e.heldScan.Unlock()
			if err != nil {
				return err
			}
			ready <- jobs
			if len(jobs) == 0 {
				return nil
			}
			end := <-h.settle
			if end.rollback {
				return errHeldRollback
			}
			e.heldWrite.Lock() // until the commit
			wrote = true
			return e.settleHeld(ctx, tx, h, end)
		})
		if wrote {
			e.heldWrite.Unlock()
		}
		h.done <- err
	}()
	select {
	case jobs := <-ready:
		if len(jobs) == 0 {
			return nil, <-h.done
		}
		h.Jobs = jobs
		return h, nil
	case err := <-h.done:
		return nil, fmt.Errorf("queuety: held claim: %w", err)
	}
}

// lockHeld locks the held claim's rows, queue by queue, and prepares
// them as the claim would (claimIn).
func (e *Engine) lockHeld(ctx context.Context, tx driver.HeldTx, req ClaimRequest, h *Held) ([]*Claimed, error) {
	now := e.clock.Now()
	h.claimedAt = now
	var out []*Claimed
	for _, q := range req.Queues {
		jobs, err := tx.JobLockHeld(ctx, driver.ClaimParams{Queue: q, Handlers: req.Handlers, Limit: req.Limit - len(out), Now: now})
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			// The row as the claim's UPDATE would leave it.
			j.Status = driver.JobProcessing
			j.ReservedAt = now.UTC().Truncate(time.Second)
			j.Attempts = min(j.Attempts+1, 255)
			j.ClaimToken = h.token + int64(j.Attempts)
			out = append(out, newClaimed(j, now))
		}
		if len(out) >= req.Limit {
			break
		}
	}
	return out, nil
}

// settleHeld writes a held claim's outcome in its transaction: the
// converted jobs claimed as the claim does, the completed ones with the
// claim's and the completion's columns in one UPDATE and the log rows,
// batch and compensation writes of CompleteJobs.
func (e *Engine) settleHeld(ctx context.Context, tx driver.HeldTx, h *Held, end heldEnd) error {
	now := e.clock.Now()
	if len(end.convert) > 0 {
		ids := make([]int64, len(end.convert))
		for i, cj := range end.convert {
			ids[i] = cj.Job.ID
		}
		if err := tx.JobClaimHeld(ctx, ids, h.token, now); err != nil {
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
	if err := tx.JobCompleteHeld(ctx, ids, h.token, h.claimedAt, now); err != nil {
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

// Settle ends the held claim: completed (successful attempts of its jobs)
// become completed, convert (jobs whose handlers still run, or failed
// attempts the caller records with Finish next) become claimed as Claim
// claims, with their held claim token, in one transaction it commits.
// On an error nothing was written (or, when the commit's outcome is
// unknown, perhaps all of it): the jobs are pending again and run again.
func (h *Held) Settle(completed []*Result, convert []*Claimed) error {
	h.settle <- heldEnd{completed: completed, convert: convert}
	if err := <-h.done; err != nil {
		return fmt.Errorf("queuety: settle held claim: %w", err)
	}
	setCompleted(completed, make([]error, len(completed)))
	return nil
}

// Rollback ends the held claim without writing anything: its jobs are
// pending again, their attempts unchanged.
func (h *Held) Rollback() {
	h.settle <- heldEnd{rollback: true}
	<-h.done
}
