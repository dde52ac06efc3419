package engine

// This file holds the transitions the sweeps trigger, one row at a time.
// The sweeps themselves (which rows are due, batching, SKIP LOCKED,
// repeating until a batch comes back short) live in internal/sweep and
// package deadline; each method here runs inside the sweep's transaction,
// on a row the sweep found and locked, and makes the engine's change to it.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// ExpireLocked expires wf, locked by the caller, if it is past a deadline
// at now: it is failed with its timeout and its OnDeadline callback is
// enqueued (advance.Service.ExpireLocked). It reports whether it expired
// it, and whether it left it to a worker that has its deadline handler
// instead (see internal/advance's handoff.go); a workflow no longer past
// its deadline is neither.
func (e *Engine) ExpireLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (expired, left bool, err error) {
	kind := workflowExpired(wf, now)
	if kind == "" {
		return false, false, nil
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		state = phpjson.NewObject()
	}
	if e.flow.LeaveExpiry(wf, state, kind, now) {
		return false, true, nil
	}
	return true, false, e.flow.ExpireLocked(ctx, tx, wf, state, kind, now, nil)
}

// TimeOutWaitLocked settles the signal wait of wf, locked by the caller,
// if its timeout passed before the signal, and reports whether it timed
// the wait out (see advance.Service.TimeOutWaitLocked).
func (e *Engine) TimeOutWaitLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	return e.flow.TimeOutWaitLocked(ctx, tx, wf, now)
}

// RecoverWaitLocked re-evaluates the wait of wf, a workflow waiting for
// workflows that the caller locked, whose dependencies ended without
// seeing the wait (see advance.Service.RecoverWaitLocked). It reports
// whether the wait settled or failed.
func (e *Engine) RecoverWaitLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	return e.flow.RecoverWaitLocked(ctx, tx, wf, now)
}

// TickNotes collects what the ticks of one schedule-tick transaction noted
// beside their firings (package internal/schedule). Reset it when the
// transaction starts (it may run again).
type TickNotes = schedule.TickNotes

// TickLocked fires schedule s, locked by the caller, if it is due at now,
// with a compare-and-set on next_run, and records what it noted in notes.
// It returns how many jobs or workflows it dispatched and whether it moved
// the schedule on.
func (e *Engine) TickLocked(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time, notes *TickNotes) (int, bool, error) {
	return e.schedules.TickOne(ctx, tx, s, now, notes)
}

// TickCommitted finishes a schedule tick after its transaction committed
// with fired firings and the given notes: it logs a warning per schedule
// whose slots were missed, wakes idle workers when it dispatched anything,
// and returns the tick's report; more is whether the sweep found a full
// batch of due schedules that it moved on.
func (e *Engine) TickCommitted(fired int, more bool, notes *TickNotes) ScheduleTick {
	r := ScheduleTick{Fired: fired, More: more || notes.Backlog(), Missed: e.schedules.LogMissed(notes)}
	if fired > 0 {
		e.wake() // the dispatched jobs start without a poll
	}
	return r
}

// ScheduleTick is what one schedule tick did.
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

// StaleFailures are the workflows whose step jobs a stale recovery
// buried; FailStaleWorkflows fails them once the recovery committed.
type StaleFailures struct{ list []wfFailure }

// StaleCutoffs returns the claim times before which a claim found at now
// is stale: reservedBefore for any worker's claim (the stale timeout) and
// leaseBefore for a Go worker's lease (the lease timeout).
func (e *Engine) StaleCutoffs(now time.Time) (reservedBefore, leaseBefore time.Time) {
	return now.Add(-e.cfg.StaleTimeout), now.Add(-e.cfg.LeaseTimeout)
}

// RecoverStaleLocked takes back rows, stale processing jobs locked by the
// caller: each is retried with backoff or, when its attempts are used up,
// buried. Processing jobs with no claim time (reserved_at NULL) are
// recovered the same way. The workflows of buried step jobs are added to
// fail, to be failed by FailStaleWorkflows after the transaction commits.
func (e *Engine) RecoverStaleLocked(ctx context.Context, tx driver.Tx, rows []*driver.Job, fail *StaleFailures) error {
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
			fail.list = append(fail.list, wfFailure{id: row.WorkflowID, jobID: row.ID, msg: cause.Error()})
		}
		if buried && row.WorkflowID == 0 && row.Handler == machine.ActionJobHandler {
			// Queuety PHP's stale recovery fails the action's machine,
			// with the buried job's error.
			rt := &machine.Runtime{Store: e.store, Now: e.clock.Now}
			if err := rt.FailStale(ctx, tx, row, row.ErrorMessage); err != nil {
				return err
			}
		}
	}
	return nil
}

// FailStaleWorkflows fails, each in its own transaction, the workflows a
// committed stale recovery buried a step job of. A workflow that cannot be
// failed is logged and left.
func (e *Engine) FailStaleWorkflows(ctx context.Context, fail StaleFailures) {
	for _, f := range fail.list {
		if err := e.failWorkflow(ctx, f); err != nil {
			e.log.Error("queuety: fail workflow of stale job", "workflow_id", f.id, "err", err)
		}
	}
}

// SweepCursor is where a sweep that walks a table a window at a time
// stopped, kept with the engine so that every sweeper of one engine
// continues from it.
type SweepCursor struct {
	// After is the id after which the next window starts.
	After atomic.Int64
	// Started is set once After has been placed.
	Started atomic.Bool
}

// OverrunCursor returns the cursor of the overrun sweep.
func (e *Engine) OverrunCursor() *SweepCursor { return &e.overrun }

// HasWorkers reports whether this process has registered workers.
func (e *Engine) HasWorkers() bool {
	_, anyWorker := e.knows("")
	return anyWorker
}

// PHPWorkflowCallbacks is the queue on which compensations and cancel
// callbacks are handed to Queuety PHP; "" when there is none.
func (e *Engine) PHPWorkflowCallbacks() string { return e.cfg.PHPWorkflowCallbacks }
