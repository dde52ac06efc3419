package engine

// This file holds the engine's side of the sweeps that package deadline
// runs: one batch transaction per call of each sweep. Workflow deadlines,
// wait timers and schedule ticks share sweepBatch; the activity-timeout
// watchdog and stale recovery find their rows first and then settle each
// job under its own lock, because settling a job may fail its workflow.

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/store/driver"
)

// sweepBatch is the body every sweep shares: in one transaction, find up
// to limit candidates with find (a Tx method expression that reads with
// SKIP LOCKED, so concurrent sweepers take disjoint rows), apply each one,
// and report how
// many rows changed and whether a full batch was found, in which case the
// caller sweeps again. apply reports per candidate how many rows it
// changed and whether it made progress; a full batch whose candidates made
// no progress ends the sweep, so rows that stay due cannot spin it.
func sweepBatch[T any](ctx context.Context, e *Engine, what string, limit int,
	find func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]T, error),
	apply func(ctx context.Context, tx driver.Tx, row T, now time.Time) (changed int, progressed bool, err error),
) (int, bool, error) {
	var n int
	var more bool
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.clock.Now()
		rows, err := find(tx, ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		progressed := false
		for _, row := range rows {
			c, p, err := apply(ctx, tx, row, now)
			if err != nil {
				return err
			}
			n, progressed = n+c, progressed || p
		}
		more = len(rows) >= limit && progressed
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: %s: %w", what, err)
	}
	return n, more, nil
}

// ExpireWorkflows expires up to limit workflows past a deadline. Candidates
// are read through the deadline indexes with SKIP LOCKED and expired under
// their lock, so concurrent sweepers split the work and each workflow is
// expired (and its callback enqueued) once. It returns how many it expired
// and whether a full batch was found (more may be waiting).
//
// Workflows this process leaves to a worker that has their deadline
// handler (see handoff.go) are added to *left and skipped by later batches
// of the same sweep; left may be nil.
func (e *Engine) ExpireWorkflows(ctx context.Context, limit int, left *[]int64) (int, bool, error) {
	if left == nil {
		left = new([]int64)
	}
	find := func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
		p.Exclude = *left
		return tx.WorkflowFindExpired(ctx, p)
	}
	return sweepBatch(ctx, e, "expire workflows", limit, find,
		func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (int, bool, error) {
			kind := workflowExpired(wf, now)
			if kind == "" {
				return 0, true, nil
			}
			state, err := DecodeObject("workflow state", wf.State)
			if err != nil {
				state = phpjson.NewObject()
			}
			if e.leaveExpiry(wf, state, kind, now) {
				*left = append(*left, wf.ID)
				return 0, true, nil
			}
			return 1, true, e.expireLocked(ctx, tx, wf, state, kind, now, nil)
		})
}

// FireWaitTimeouts settles up to limit signal waits whose timeout has
// passed: the workflow continues with TimedOutKey(...) = true. Candidates
// are read with SKIP LOCKED and re-checked under the row lock, which a
// competing Signal also takes, so exactly one of the signal and the timer
// wins. It returns how many waits it timed out and whether a full batch
// was found.
func (e *Engine) FireWaitTimeouts(ctx context.Context, limit int) (int, bool, error) {
	return sweepBatch(ctx, e, "fire wait timeouts", limit, driver.Tx.WorkflowFindWaitExpired,
		func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (int, bool, error) {
			if wf.Status != driver.WorkflowWaitingForSignal || wf.WaitDeadlineAt.IsZero() || now.Before(wf.WaitDeadlineAt) {
				return 0, true, nil
			}
			state, err := DecodeObject("workflow state", wf.State)
			if err != nil {
				return 0, false, err
			}
			steps, err := parseSteps(state)
			if err != nil {
				return 0, false, err
			}
			if wf.CurrentStep >= len(steps) || steps[wf.CurrentStep].Type != "wait_for_signal" {
				return 0, true, nil
			}
			step := steps[wf.CurrentStep]
			if err := tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{
				"type": "signal_timed_out", "signals": stringsToAny(step.SignalNames), "timeout_at": isoTime(wf.WaitDeadlineAt)})}); err != nil {
				return 0, false, err
			}
			return 1, true, e.settleWait(ctx, tx, wf, state, steps, wf.CurrentStep, signalOutput(step, nil, true), now)
		})
}

// TickSchedules fires the due schedules: up to limit rows taken with SKIP
// LOCKED, each changed under its lock with a compare-and-set on next_run,
// so any number of workers and processes ticking at once fire every due
// slot exactly once. It reports how many jobs or workflows it dispatched,
// how many due slots got no firing of their own under their schedule's
// catch-up policy (each such schedule is logged as a warning once the
// tick committed), and whether calling it again may fire more: a full
// batch was due and the tick moved at least one of its schedules on
// (buffered firings still waiting for their runs alone do not count, or a
// caller looping on it would spin until those runs end), or a CatchUpAll
// schedule has more missed slots than one tick fires.
func (e *Engine) TickSchedules(ctx context.Context, limit int) (ScheduleTick, error) {
	var notes schedule.TickNotes
	find := func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]*driver.Schedule, error) {
		notes.Reset() // the transaction may run again
		return tx.ScheduleFindDue(ctx, p)
	}
	n, more, err := sweepBatch(ctx, e, "tick schedules", limit, find,
		func(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time) (int, bool, error) {
			return e.schedules.TickOne(ctx, tx, s, now, &notes)
		})
	if err != nil {
		return ScheduleTick{}, err
	}
	r := ScheduleTick{Fired: n, More: more || notes.Backlog(), Missed: e.schedules.LogMissed(&notes)}
	if n > 0 {
		e.wake() // the dispatched jobs start without a poll
	}
	return r, nil
}

// ScheduleTick is what one TickSchedules call did.
type ScheduleTick struct {
	// Fired is how many jobs or workflows it dispatched.
	Fired int
	// Missed is how many due slots got no firing of their own: merged
	// into one firing (CatchUpOnce) or skipped (CatchUpNone) because the
	// tick came after more than one slot of their schedule.
	Missed int
	// More reports that calling it again may fire more.
	More bool
}

// EnforceTimeouts finds up to limit jobs with an expired activity deadline
// through the deadline indexes (a plain read, so its cost grows with the
// expired rows, not with the table) and enforces each under its own lock.
// It returns how many timeouts it applied and whether a full batch of
// candidates was found. Concurrent enforcers may examine the same
// candidates; the lock and re-check let only one of them act.
func (e *Engine) EnforceTimeouts(ctx context.Context, limit int) (int, bool, error) {
	var ids []int64
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		jobs, err := tx.JobFindTimedOut(ctx, driver.TimedOutParams{Now: e.clock.Now(), Limit: limit, Lock: driver.LockNone})
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: find timed-out jobs: %w", err)
	}
	n := 0
	for _, id := range ids {
		acted, err := e.EnforceTimeout(ctx, id)
		if err != nil {
			return n, false, err
		}
		if acted {
			n++
		}
	}
	return n, len(ids) >= limit, nil
}

// RecoverStale takes back up to limit jobs whose claim has not been renewed
// within the stale timeout, and processing jobs with no claim time
// (reserved_at NULL), which nothing would ever renew: each is retried or,
// when its attempts are used up, buried (failing its workflow). Rows are claimed
// with SKIP LOCKED and changed under their lock, so any number of
// concurrent sweepers recover each job once. It returns how many jobs it
// recovered and whether a full batch was found.
func (e *Engine) RecoverStale(ctx context.Context, limit int) (int, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	var n int
	var more bool
	var failWorkflows []wfFailure
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		n, failWorkflows = 0, nil
		now := e.clock.Now()
		rows, err := tx.JobFindStale(ctx, driver.StaleParams{ReservedBefore: now.Add(-e.cfg.StaleTimeout),
			LeaseBefore: now.Add(-e.cfg.LeaseTimeout), Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		var wfIDs []int64
		for _, row := range rows {
			if row.WorkflowID != 0 && row.StepIndex != nil {
				wfIDs = append(wfIDs, row.WorkflowID)
			}
		}
		wfs, err := workflowsByID(ctx, tx, wfIDs, driver.LockNone)
		if err != nil {
			return err
		}
		for _, row := range rows {
			cause := errStale
			if row.ReservedAt.IsZero() {
				cause = errStaleUnreserved
			}
			cj := takeOver(row, wfs[row.WorkflowID])
			buried, err := e.failAttempt(ctx, tx, cj, row, &Result{Claimed: cj, Err: cause}, nil)
			if err != nil {
				return err
			}
			if buried && row.WorkflowID != 0 {
				failWorkflows = append(failWorkflows, wfFailure{id: row.WorkflowID, jobID: row.ID, msg: cause.Error()})
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: recover stale jobs: %w", err)
	}
	for _, f := range failWorkflows {
		if err := e.failWorkflow(ctx, f); err != nil {
			e.log.Error("queuety: fail workflow of stale job", "workflow_id", f.id, "err", err)
		}
	}
	return n, more, nil
}
