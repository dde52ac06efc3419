package sweep

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// FailOverrunWorkflows reads the positions of up to window running
// workflows, after those the previous call on the same engine read, and
// fails each whose current_step is past its total_steps, under its row
// lock (engine.FailOverrun). No index finds such rows (the condition
// compares two columns), so the sweep walks the running workflows through
// the status index a window at a time, continuing where its last window
// ended (the engine's OverrunCursor) and starting over after the newest.
// It returns how many it failed, whether the window was full (more running
// workflows follow it), and the errors of the workflows it could not fail,
// after trying the rest; after a short window the next call starts over
// from the first. A fresh engine starts at a random id, so processes that
// run one sweep and exit (work --once) do not all examine the same window.
func FailOverrunWorkflows(ctx context.Context, e *engine.Engine, window int) (int, bool, error) {
	if window <= 0 {
		window = 500
	}
	cur := e.OverrunCursor()
	after, err := overrunStart(ctx, e, cur)
	if err != nil {
		return 0, false, err
	}
	var pos []driver.WorkflowPosition
	err = e.Store().InTx(ctx, func(tx driver.Tx) error {
		var err error
		pos, err = tx.WorkflowRunningPositions(ctx, after, window)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: find workflows past their last step: %w", err)
	}
	full := len(pos) >= window
	if full {
		cur.After.Store(pos[len(pos)-1].ID)
	} else {
		cur.After.Store(0)
	}
	n := 0
	var errs []error
	for _, p := range pos {
		if p.CurrentStep <= p.TotalSteps {
			continue
		}
		// One workflow that cannot be failed (its row unreadable, say)
		// does not keep the sweep from the others.
		failed, err := e.FailOverrun(ctx, p.ID)
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
func overrunStart(ctx context.Context, e *engine.Engine, cur *engine.SweepCursor) (int64, error) {
	if cur.Started.Load() {
		return cur.After.Load(), nil
	}
	var newest []*driver.Workflow
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
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
	if cur.Started.CompareAndSwap(false, true) {
		cur.After.Store(start)
	}
	return cur.After.Load(), nil
}
