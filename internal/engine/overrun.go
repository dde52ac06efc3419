package engine

// This file fails workflows that nothing would ever move on because their
// row says they are past their last step: status running with
// current_step greater than total_steps. The engine completes a workflow
// when it advances to total_steps, so such a row was written by hand, by
// an older or foreign writer, or lost a write: which steps ran cannot be
// told from it, and there is no step job to run. Completing it could hand
// a parent a result it never had, so it is failed with a message that says
// what the row holds, and its state is kept for whoever looks into it.
//
// No index finds such rows (the condition compares two columns), so the
// sweep walks the running workflows through the status index a window at
// a time, continuing where its last window ended and starting over after
// the newest: each call reads at most one window, however many workflows
// there are.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/queuety/queuety-go/store/driver"
)

// overrunMessage is the error stored on a workflow failed for being past
// its last step.
func overrunMessage(wf *driver.Workflow) string {
	return fmt.Sprintf("Workflow %d is at step %d of %d: its current step is past its last step, so no step can run. "+
		"It was failed by the engine's sweep; its state is kept.", wf.ID, wf.CurrentStep, wf.TotalSteps)
}

// FailOverrunWorkflows reads the positions of up to window running
// workflows, after those the previous call read, and fails each whose
// current_step is past its total_steps, under its row lock: open jobs
// buried, workflow_failed logged, an internal failure recorded, the
// parent and waiters told, compensation started when the workflow asks
// for it. It returns how many it failed, whether the window was full
// (more running workflows follow it), and the errors of the workflows it
// could not fail, after trying the rest; after a short window the next call
// starts over from the first. A fresh engine starts at a random id, so
// processes that run one sweep and exit (work --once) do not all examine
// the same window.
func (e *Engine) FailOverrunWorkflows(ctx context.Context, window int) (int, bool, error) {
	if window <= 0 {
		window = 500
	}
	after, err := e.overrunStart(ctx)
	if err != nil {
		return 0, false, err
	}
	var pos []driver.WorkflowPosition
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		pos, err = tx.WorkflowRunningPositions(ctx, after, window)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: find workflows past their last step: %w", err)
	}
	full := len(pos) >= window
	if full {
		e.overrunCursor.Store(pos[len(pos)-1].ID)
	} else {
		e.overrunCursor.Store(0)
	}
	n := 0
	var errs []error
	for _, p := range pos {
		if p.CurrentStep <= p.TotalSteps {
			continue
		}
		// One workflow that cannot be failed (its row unreadable, say)
		// does not keep the sweep from the others.
		failed, err := e.failOverrun(ctx, p.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if failed {
			n++
		}
	}
	return n, full, errors.Join(errs...)
}

// overrunStart is the id after which the next window starts: the cursor,
// or on a fresh engine a random id up to the newest workflow's.
func (e *Engine) overrunStart(ctx context.Context) (int64, error) {
	if e.overrunStarted.Load() {
		return e.overrunCursor.Load(), nil
	}
	var newest []*driver.Workflow
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		newest, err = tx.WorkflowList(ctx, driver.WorkflowFilter{Limit: 1})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: find workflows past their last step: %w", err)
	}
	var start int64
	if len(newest) > 0 && newest[0].ID > 0 {
		start = rand.Int64N(newest[0].ID)
	}
	if e.overrunStarted.CompareAndSwap(false, true) {
		e.overrunCursor.Store(start)
	}
	return e.overrunCursor.Load(), nil
}

// failOverrun fails one workflow past its last step, after checking under
// its lock that it still is. It reports whether it failed it.
func (e *Engine) failOverrun(ctx context.Context, id int64) (bool, error) {
	var failed bool
	var msg string
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		failed = false
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if wf.Status != driver.WorkflowRunning || wf.CurrentStep <= wf.TotalSteps {
			return nil
		}
		now := e.clock.Now()
		msg = overrunMessage(wf)
		if err := e.failWorkflowLocked(ctx, tx, wf, 0, msg, now); err != nil {
			return err
		}
		failed = true
		return tx.FailureInsert(ctx, &driver.Failure{WorkflowID: wf.ID, RunNumber: max(wf.RunNumber, 1),
			Category: driver.FailureInternal, NonRetryable: true, Message: msg, CreatedAt: now})
	})
	if err != nil {
		return false, fmt.Errorf("queuety: fail workflow %d past its last step: %w", id, err)
	}
	if failed {
		e.log.Warn("queuety: workflow failed: its row is past its last step", "workflow_id", id, "error", msg)
	}
	return failed, nil
}
