package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// Release hands claimed jobs that never started back to the queue: pending
// again, with the claim's attempt taken back, so nothing is lost or
// counted. Jobs this process no longer owns are left alone.
func (e *Engine) Release(ctx context.Context, jobs []*Claimed) error {
	return e.release(ctx, jobs, 0)
}

// Defer hands a claimed job that this process cannot run back to the
// queue like Release, due again after delay, so that a worker that can
// run it (another Go worker, or Queuety PHP) takes it first. The attempt
// is taken back: deferring never fails a job.
func (e *Engine) Defer(ctx context.Context, cj *Claimed, delay time.Duration) error {
	return e.release(ctx, []*Claimed{cj}, delay)
}

func (e *Engine) release(ctx context.Context, jobs []*Claimed, delay time.Duration) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	for i, cj := range jobs {
		ids[i] = cj.Job.ID
	}
	ctx, woke := e.noteJobs(ctx) // the jobs handed back are claimable again
	defer woke()
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		byID, err := jobsByID(ctx, tx, ids, driver.LockUpdate)
		if err != nil {
			return err
		}
		for _, cj := range jobs {
			row := byID[cj.Job.ID]
			if row == nil || !cj.owns(row) {
				continue
			}
			row.Status = driver.JobPending
			row.Attempts = max(row.Attempts-1, 0)
			row.ReservedAt = time.Time{}
			row.ClaimToken = 0
			row.ScheduleToStartAt = cj.prevS2S
			if delay > 0 {
				row.AvailableAt = rowtime.Due(e.clock.Now(), delay)
			}
			clearAttemptDeadlines(row)
			if err := tx.JobUpdate(ctx, row); err != nil {
				return err
			}
			if delay <= 0 {
				jobnote.Ready(ctx, row)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queuety: release jobs: %w", err)
	}
	return nil
}

// RenewLeases refreshes reserved_at on the jobs this process is running,
// so stale recovery leaves them alone, and on the jobs whose successes it
// has yet to record (waiting), so a recording that waits (on locks, or
// for the database to come back) does not let them go stale and run
// again. It reports the running jobs it no longer owns, with the reason
// (their workflow failed, they were recovered as stale or timed out);
// waiting jobs it no longer owns are left alone, their results to be
// refused when recorded. A job whose row another transaction holds (a
// recording, a sweep) is skipped, not waited for, and renewed next time:
// one busy row must not hold up every other renewal until they all go
// stale.
func (e *Engine) RenewLeases(ctx context.Context, running, waiting []*Claimed) (map[int64]error, error) {
	lost := map[int64]error{}
	all := append(running[:len(running):len(running)], waiting...)
	if len(all) == 0 {
		return lost, nil
	}
	ids := make([]int64, len(all))
	for i, cj := range all {
		ids[i] = cj.Job.ID
	}
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		clear(lost)
		now := e.clock.Now()
		held, err := jobsByID(ctx, tx, ids, driver.LockSkipLocked)
		if err != nil {
			return err
		}
		var busy []int64 // running jobs whose rows another transaction holds
		for _, cj := range running {
			if held[cj.Job.ID] == nil {
				busy = append(busy, cj.Job.ID)
			}
		}
		var seen map[int64]*driver.Job // their rows as last committed
		if len(busy) > 0 {
			if seen, err = jobsByID(ctx, tx, busy, driver.LockNone); err != nil {
				return err
			}
		}
		byToken := map[int64][]int64{}
		for i, cj := range all {
			row := held[cj.Job.ID]
			switch {
			case row != nil && cj.owns(row):
				byToken[row.ClaimToken] = append(byToken[row.ClaimToken], row.ID)
			case i >= len(running): // a waiting success: refused when recorded
			case row != nil:
				lost[cj.Job.ID] = lostReason(row)
			case seen[cj.Job.ID] == nil:
				lost[cj.Job.ID] = fmt.Errorf("%w: job %d was deleted", ErrLeaseLost, cj.Job.ID)
			case !cj.owns(seen[cj.Job.ID]):
				lost[cj.Job.ID] = lostReason(seen[cj.Job.ID])
			}
		}
		for token, ids := range byToken {
			if _, err := tx.JobTouch(ctx, ids, token, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: renew leases: %w", err)
	}
	return lost, nil
}

// lostReason explains why an attempt lost its job.
func lostReason(row *driver.Job) error {
	if row.ErrorMessage == ErrDeadlineExceeded.Error() {
		return fmt.Errorf("%w: %w: the job's workflow passed its deadline", ErrLeaseLost, ErrDeadlineExceeded)
	}
	if row.ErrorMessage != "" {
		return fmt.Errorf("%w: job is %s: %s", ErrLeaseLost, row.Status, row.ErrorMessage)
	}
	return fmt.Errorf("%w: job is %s under another attempt", ErrLeaseLost, row.Status)
}

// errStale is the failure of an attempt whose worker stopped renewing its
// claim. The handler did not fail, so the retry waits for no backoff and
// keeps its place in the queue (see failAttempt).
var errStale = errors.New(StaleMessage)

// staleUnreservedMessage is the error stored on a job buried by stale
// recovery that was processing without reserved_at: no claim time, so no
// worker could be renewing it.
const staleUnreservedMessage = "Stale: the job was processing with no reserved_at (no claim time), so no worker held it."

// errStaleUnreserved is errStale for a processing row without reserved_at.
var errStaleUnreserved = staleError(staleUnreservedMessage)

// staleError is a stale-recovery failure with its own message; errors.Is
// matches it to errStale.
type staleError string

func (e staleError) Error() string        { return string(e) }
func (e staleError) Is(target error) bool { return target == errStale }

// takeOver returns a Claimed for a row whose attempt the engine ends
// itself (stale recovery, timeouts), with the payload's runtime options
// when the payload decodes. wf is the step's workflow, or nil. It voids
// the row's claim, so a late result from that attempt changes nothing.
func takeOver(row *driver.Job, wf *driver.Workflow) *Claimed {
	row.ClaimToken = 0
	cj := &Claimed{Job: row, flow: advance.Step{Workflow: wf}}
	if doc, err := workflowstate.DecodeObject("payload", row.Payload); err == nil {
		cj.payload = doc
		cj.runtime = jobruntime.Parse(doc)
	}
	return cj
}

// Heartbeat records progress for a running attempt: it renews the claim,
// stores details (when non-nil) for a later attempt to read, and pushes
// the heartbeat deadline out. It returns ErrStaleAttempt when the attempt
// no longer owns the job.
func (e *Engine) Heartbeat(ctx context.Context, cj *Claimed, details []byte) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.clock.Now()
		row, err := tx.JobGet(ctx, cj.Job.ID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !cj.owns(row) {
			return ErrStaleAttempt
		}
		row.ReservedAt = now
		row.LastHeartbeatAt = now
		if details != nil {
			row.HeartbeatData = details
		}
		if hb := cj.runtime.Timeouts.Heartbeat; hb > 0 {
			row.HeartbeatDeadline = now.Add(hb)
		}
		return tx.JobUpdate(ctx, row)
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: heartbeat job %d: %w", cj.Job.ID, err)
	}
	return err
}
