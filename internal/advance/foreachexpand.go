package advance

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file expands for_each placeholder jobs in the batches of
// CompleteBranchGroups: a group holding a placeholder's attempt is
// expanded in the same transaction as the other groups, so the
// placeholders of many workflows claimed together are completed with
// one statement, their workflows written with one and every branch job
// of all of them inserted with one (in chunks). A placeholder whose
// expansion does more than enqueue branches (no item is missing, so the
// step settles or fails at once; the items are not a list or break a
// budget) or whose workflow moved on is handed to the one-by-one path,
// with nothing written for it.

// isExpandGroup reports whether g holds a for_each placeholder's
// attempt.
func isExpandGroup(g *BranchGroup) bool {
	for _, at := range g.Attempts {
		if at.Job().Handler == handlerForEach {
			return true
		}
	}
	return false
}

// openExpandGroup decodes the state of a placeholder's workflow as
// locked, or returns nil when the group must go through the one-by-one
// path: more than one attempt, or the workflow is gone, expired, not
// running, or not at a for_each step.
func (s *Service) openExpandGroup(g *BranchGroup, wf *driver.Workflow, now time.Time) *branchGroup {
	if len(g.Attempts) != 1 || wf == nil || s.core.Expired(wf, now) != "" ||
		(wf.Status != driver.WorkflowRunning && wf.Status != driver.WorkflowPaused) {
		return nil
	}
	state, steps, err := s.DecodeState(wf)
	if err != nil {
		return nil
	}
	idx := wf.CurrentStep
	if idx >= len(steps) || steps[idx].Type != queuetytype.StepForEach {
		return nil
	}
	// The decoded tree may be shared (the cache, claims): the expansion
	// sets a top-level key of a copy, and the items are only read.
	return &branchGroup{g: g, wf: wf, state: state.Shallow(), steps: steps, expand: true}
}

// applyExpandGroup expands a group's placeholder into w and returns its
// job to complete. A stale attempt gets ErrStaleAttempt; a placeholder
// the batch cannot expand marks the group Fallback, with nothing
// written for it.
func (s *Service) applyExpandGroup(ctx context.Context, tx driver.Tx, w *Writes, bg *branchGroup, rows map[int64]*driver.Job, now time.Time) []int64 {
	at := bg.g.Attempts[0]
	row := rows[at.Job().ID]
	if row == nil || !at.Owns(row) {
		bg.g.Errs[0] = queuetytype.ErrStaleAttempt
		return nil
	}
	idx := bg.wf.CurrentStep
	if row.StepIndex == nil || *row.StepIndex != idx {
		bg.g.Fallback = true
		return nil
	}
	sc := &stepCtx{ctx: detached(ctx), s: s, tx: tx, wf: bg.wf, row: row, state: bg.state, steps: bg.steps, step: bg.steps[idx], at: at, now: now}
	all, rt, err := sc.loadExpand()
	if err != nil || len(rt.Missing()) == 0 {
		bg.g.Fallback = true
		return nil
	}
	sc.expandInto(w, sc.inputs(), all, rt)
	bg.done = 1
	return []int64{row.ID}
}
