package advance

import (
	"context"
	"errors"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file records for-each branch results in batches: the successful
// branches of several workflows, several branches each, in one
// transaction. Each workflow is locked once (all of them with one
// statement, in id order), its state decoded and written once for all
// its branches, and the branches' jobs, events and log rows are written
// with one statement each for the whole batch. The state keeps Queuety's
// shape (every result under _for_each_steps), so Queuety PHP reads and
// advances the same rows.

// BranchGroup is the successful branch results of one workflow's
// for-each step, recorded together by CompleteBranchGroups.
type BranchGroup struct {
	// Attempts and Outputs are the branches' attempts and their outputs.
	Attempts []Attempt
	Outputs  []*phpjson.Object
	// Errs is set per attempt once recorded: nil or ErrStaleAttempt.
	Errs []error
	// Fallback is set when the group must go through the engine one by
	// one instead: the workflow is not simply running this step, or a
	// result is not usable as is (a reducer failed, a budget is
	// breached). Nothing of such a group is recorded.
	Fallback bool
}

// Expansion is the branch jobs a placeholder's expansion queued in a
// transaction of CompleteBranchGroups, not inserted yet.
type Expansion struct {
	// Group is the placeholder's group.
	Group *BranchGroup
	// Workflow, State and Steps are the workflow as the transaction
	// writes it (read-only from then on).
	Workflow *driver.Workflow
	State    *phpjson.Object
	Steps    []*stepDef
	// Jobs are the branch jobs, pending.
	Jobs []*driver.Job
}

// BranchHandoff is called in every transaction of CompleteBranchGroups
// that expands placeholders, before the branch jobs are inserted, with
// the expansions and payloadDoc (the tree a job's Payload decodes to, or
// nil: decode it). It may turn jobs into claimed ones (the eager
// handoff); what it takes counts only once the transaction commits
// with the expansion's group recorded (not Fallback, no Errs[0]).
type BranchHandoff func(ctx context.Context, tx driver.Tx, exps []Expansion, payloadDoc func(*driver.Job) *phpjson.Object, now time.Time) error

// CompleteBranchGroups records groups, each the branch results of a
// different workflow, in one transaction, and sets each group's Errs or
// Fallback. A group that turns out to need the one-by-one path after
// the transaction wrote for it rolls the transaction back, and the rest
// are recorded again without it. handoff, when not nil, may take the
// branch jobs of the placeholders' expansions (see BranchHandoff).
func (s *Service) CompleteBranchGroups(ctx context.Context, groups []*BranchGroup, handoff BranchHandoff) error {
	for {
		var live []*BranchGroup
		for _, g := range groups {
			if !g.Fallback {
				live = append(live, g)
			}
		}
		if len(live) == 0 {
			return nil
		}
		again, err := s.branchGroupsTx(ctx, live, handoff)
		if err != nil {
			return err
		}
		if !again {
			return nil
		}
	}
}

// branchGroup is one group's workflow inside the transaction.
type branchGroup struct {
	g       *BranchGroup
	wf      *driver.Workflow
	state   *phpjson.Object
	steps   []*stepDef
	all     *phpjson.Object
	rt      *workflowstate.ForEach
	settler *stepCtx
	done    int
	// memo remembers the encodings of the entries recorded (nil: the
	// state is small, encoded afresh).
	memo *phpjson.Memo
	// expand is set for a placeholder's group (foreachexpand.go), and
	// jobs are the branch jobs its expansion queued.
	expand bool
	jobs   []*driver.Job
}

// branchGroupsTx is one transaction of CompleteBranchGroups. again is
// set when a group fell back after the transaction wrote for it: the
// transaction rolled back and the other groups must be recorded again.
func (s *Service) branchGroupsTx(ctx context.Context, groups []*BranchGroup, handoff BranchHandoff) (again bool, err error) {
	var written []*branchGroup
	err = s.store.InTx(ctx, func(tx driver.Tx) error {
		again, written = false, nil
		now := s.clock.Now()
		wfIDs := make([]int64, 0, len(groups))
		for _, g := range groups {
			// The store may run this function again: start afresh.
			g.Errs, g.Fallback = make([]error, len(g.Attempts)), false
			wfIDs = append(wfIDs, g.Attempts[0].Job().WorkflowID)
		}
		wfs, err := tx.WorkflowGetMany(ctx, wfIDs, driver.LockUpdate)
		if err != nil {
			return err
		}
		byID := make(map[int64]*driver.Workflow, len(wfs))
		for _, wf := range wfs {
			byID[wf.ID] = wf
		}
		var live []*branchGroup
		var jobIDs []int64
		for _, g := range groups {
			wf := byID[g.Attempts[0].Job().WorkflowID]
			var bg *branchGroup
			if isExpandGroup(g) {
				bg = s.openExpandGroup(g, wf, now)
			} else {
				bg = s.openBranchGroup(g, wf, now)
			}
			if bg == nil {
				g.Fallback = true // nothing written for it: the rest go on
				continue
			}
			live = append(live, bg)
			for _, at := range g.Attempts {
				jobIDs = append(jobIDs, at.Job().ID)
			}
		}
		if len(live) == 0 {
			return nil
		}
		locked, err := tx.JobGetMany(ctx, jobIDs, driver.LockUpdate)
		if err != nil {
			return err
		}
		rows := make(map[int64]*driver.Job, len(locked))
		for _, row := range locked {
			rows[row.ID] = row
		}
		w := &Writes{}
		var done []int64
		for _, bg := range live {
			if bg.expand {
				from := len(w.jobs)
				done = append(done, s.applyExpandGroup(ctx, tx, w, bg, rows, now)...)
				bg.jobs = w.jobs[from:len(w.jobs):len(w.jobs)]
				continue
			}
			ids, err := s.applyBranchGroup(ctx, tx, w, bg, rows, now)
			if errors.Is(err, errRollback) {
				bg.g.Fallback, again = true, true
				return errRollback
			}
			if err != nil {
				return err
			}
			done = append(done, ids...)
		}
		if len(done) > 0 {
			// Every branch recorded is completed before any step settles:
			// settling buries the step's jobs still open.
			if err := s.completeJobs(ctx, tx, done, now); err != nil {
				return err
			}
		}
		open, err := settlersOpenJobs(ctx, tx, live)
		if err != nil {
			return err
		}
		for _, bg := range live {
			if bg.expand {
				if bg.done > 0 {
					written = append(written, bg)
				}
				continue
			}
			if err := s.closeBranchGroup(w, bg, open[bg.wf.ID]); err != nil {
				if errors.Is(err, errRollback) {
					bg.g.Fallback, again = true, true
				}
				return err
			}
			if bg.settler == nil && bg.done > 0 {
				written = append(written, bg)
			}
		}
		if err := handOffBranches(ctx, tx, handoff, w, live, now); err != nil {
			return err
		}
		if err := w.Flush(ctx, tx); err != nil {
			return err
		}
		s.cacheWritten(written)
		return nil
	})
	if errors.Is(err, errRollback) {
		return again, nil
	}
	return false, err
}

// handOffBranches offers the branch jobs of the groups' expansions to
// handoff before they are inserted.
func handOffBranches(ctx context.Context, tx driver.Tx, handoff BranchHandoff, w *Writes, groups []*branchGroup, now time.Time) error {
	if handoff == nil {
		return nil
	}
	var exps []Expansion
	for _, bg := range groups {
		if bg.expand && bg.done > 0 && len(bg.jobs) > 0 {
			exps = append(exps, Expansion{Group: bg.g, Workflow: bg.wf, State: bg.state, Steps: bg.steps, Jobs: bg.jobs})
		}
	}
	if len(exps) == 0 {
		return nil
	}
	return handoff(ctx, tx, exps, w.PayloadDoc, now)
}

// cacheWritten keeps the decoded states written for groups, which the
// next claims and results of these workflows read back. They are cached
// as the transaction commits, not after, so that no claim reading a
// state just committed decodes it again; should the commit fail, the
// cache still holds the version before (stateCache.put), and the
// version never committed is one no row matches.
func (s *Service) cacheWritten(groups []*branchGroup) {
	for _, bg := range groups {
		var keyed []*phpjson.Object
		if bg.rt != nil {
			// Loaded keyed, and every entry recorded since keyed too.
			keyed = []*phpjson.Object{bg.rt.Results, bg.rt.Failures}
		}
		s.states.put(bg.wf.ID, bg.wf.State, bg.state, bg.steps, keyed...)
	}
}

// openBranchGroup decodes the state of a group's workflow as locked, or
// returns nil when the group must go through the one-by-one path: the
// workflow is gone, expired, not running, or not at a for-each step
// whose runtime is initialised.
func (s *Service) openBranchGroup(g *BranchGroup, wf *driver.Workflow, now time.Time) *branchGroup {
	if wf == nil || s.core.Expired(wf, now) != "" || (wf.Status != driver.WorkflowRunning && wf.Status != driver.WorkflowPaused) {
		return nil
	}
	state, steps, err := s.DecodeState(wf)
	if err != nil {
		return nil
	}
	// The decoded tree may be shared (the cache, claims): the branches
	// set top-level keys of a copy, and settling works on a deep one.
	state = state.Shallow()
	idx := wf.CurrentStep
	if idx >= len(steps) || steps[idx].Type != queuetytype.StepForEach {
		return nil
	}
	all, rt := workflowstate.LoadForEachKeyed(state, idx, s.states.keyed(wf))
	if rt == nil {
		return nil
	}
	bg := &branchGroup{g: g, wf: wf, state: state, steps: steps, all: all, rt: rt, memo: s.states.memo(wf.ID)}
	if bg.memo != nil {
		// The item list, in the runtime and (most often) in the public
		// state, is written with every batch, as read.
		bg.memo.KeepList(rt.Items)
		if key := steps[idx].ItemsKey; key != "" {
			if list, ok := state.Get(key); ok {
				if l, ok := list.([]any); ok {
					bg.memo.KeepList(l)
				}
			}
		}
	}
	return bg
}

// applyBranchGroup records a group's branches in its runtime (into w)
// and returns the jobs to complete. A stale attempt gets
// ErrStaleAttempt; a branch of another step, or of a step already
// settled, is buried as Queuety buries it; the first branch that
// satisfies the step's mode becomes the group's settler, and the
// branches after it are superseded.
func (s *Service) applyBranchGroup(ctx context.Context, tx driver.Tx, w *Writes, bg *branchGroup, rows map[int64]*driver.Job, now time.Time) ([]int64, error) {
	idx := bg.wf.CurrentStep
	var done []int64
	for i, at := range bg.g.Attempts {
		row := rows[at.Job().ID]
		if row == nil || !at.Owns(row) || bg.settler != nil {
			bg.g.Errs[i] = queuetytype.ErrStaleAttempt // after settling, the rest were buried as superseded
			continue
		}
		if row.StepIndex == nil || *row.StepIndex != idx {
			if err := s.core.BuryJob(ctx, tx, row, MsgAdvancedBeforeCompletion, now); err != nil {
				return nil, err
			}
			continue
		}
		if bg.rt.Settled() {
			if err := s.core.BuryJob(ctx, tx, row, msgForEachSettled, now); err != nil {
				return nil, err
			}
			continue
		}
		sc := &stepCtx{ctx: detached(ctx), s: s, tx: tx, wf: bg.wf, row: row, state: bg.state, steps: bg.steps, step: bg.steps[idx], at: at, now: now}
		entry, satisfied, err := sc.applyBranch(w, bg.rt, bg.g.Outputs[i])
		if err != nil {
			return nil, errRollback
		}
		if bg.memo != nil {
			bg.memo.Keep(entry)
		}
		done = append(done, row.ID)
		if satisfied {
			bg.settler = sc
		}
	}
	bg.done = len(done)
	return done, nil
}

// settlersOpenJobs reads and locks, with one statement, the open jobs of
// the workflows whose step settles in this transaction, for settling to
// bury those of the step. The groups' jobs must be completed already.
func settlersOpenJobs(ctx context.Context, tx driver.Tx, groups []*branchGroup) (map[int64]*openJobs, error) {
	var ids []int64
	for _, bg := range groups {
		if bg.settler != nil {
			ids = append(ids, bg.wf.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return openJobsOf(ctx, tx, ids)
}

// closeBranchGroup writes a group's outcome into w once its jobs are
// completed: the settled step's transition (open holds the workflow's
// open jobs), or the state with the new results, written once for all
// of the group's branches.
func (s *Service) closeBranchGroup(w *Writes, bg *branchGroup, open *openJobs) error {
	if bg.settler != nil {
		bg.state = bg.state.Clone()
		bg.settler.state = bg.state
		if err := bg.settler.settleForEach(w, bg.rt, bg.all, open); err != nil {
			var af *AttemptFailure
			if isFinal(err) || errors.As(err, &af) {
				return errRollback
			}
			return err
		}
		return nil
	}
	if bg.done == 0 {
		return nil
	}
	bg.rt.Store(bg.state, bg.all, bg.wf.CurrentStep)
	if err := s.checkBudget(bg.state); err != nil {
		return errRollback
	}
	bg.wf.State = workflowstate.EncodeJSONMemo(bg.state, bg.memo, len(bg.wf.State)+len(bg.wf.State)/8)
	w.workflows = append(w.workflows, bg.wf)
	return nil
}
