package advance

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file runs Queuety's wait_for_workflows steps (wait_for_workflow,
// wait_for_workflows and wait_for_workflow_group): the workflow parks in
// waiting_for_workflows, with one workflow_dependencies row per workflow it
// waits on, until the wait is satisfied (all, any, or a quorum completed)
// or can no longer be.
//
// A wait and the end of a workflow it waits on never miss each other: the
// wait reads its dependencies with row locks, and every workflow end
// re-evaluates its waiters in the same transaction (see wakeWaiters).

// Messages Queuety writes for workflow waits.
const msgWaitUnsatisfiable = "Workflow wait could not be satisfied."

// lockDependencies reads the workflows a wait depends on, locked, so that a
// dependency that is ending either finishes first or sees this wait's rows.
func lockDependencies(ctx context.Context, tx driver.Tx, ids []int64) (map[int64]*driver.Workflow, error) {
	rows, err := tx.WorkflowGetMany(ctx, ids, driver.LockUpdate)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*driver.Workflow, len(rows))
	for _, wf := range rows {
		out[wf.ID] = wf
	}
	return out, nil
}

// evaluateWorkflowWait runs a wait_for_workflows placeholder: settle,
// park, or fail.
func (sc *stepCtx) evaluateWorkflowWait() error {
	ctx, tx := sc.ctx, sc.tx
	idx := sc.wf.CurrentStep
	in, err := sc.completePlaceholder()
	if err != nil {
		return err
	}
	ids := workflowstate.WaitIDs(sc.step, sc.state)
	rows, err := lockDependencies(ctx, tx, ids)
	if err != nil {
		return err
	}
	switch workflowstate.EvaluateWait(sc.step, ids, rows) {
	case "satisfied":
		if err := tx.DependencyClear(ctx, sc.wf.ID, idx); err != nil {
			return err
		}
		return sc.s.SettleWait(ctx, tx, sc.wf, sc.state, sc.steps, idx, workflowstate.WaitOutput(sc.step, ids, rows), sc.now)
	case "impossible":
		if err := tx.DependencyClear(ctx, sc.wf.ID, idx); err != nil {
			return err
		}
		sc.state.Delete("_wait")
		sc.state.Delete("_waiting_for_signal")
		sc.wf.State = workflowstate.EncodeJSON(sc.state)
		return sc.s.FailWorkflowLocked(ctx, tx, sc.wf, 0, msgWaitUnsatisfiable, sc.now)
	}
	if sc.wf.Status == driver.WorkflowWaitingForWorkflows {
		return nil // already parked; nothing changed
	}
	if err := tx.DependencySet(ctx, sc.wf.ID, idx, ids, sc.now); err != nil {
		return err
	}
	waitingFor := make([]any, len(ids))
	for i, id := range ids {
		waitingFor[i] = strconv.FormatInt(id, 10)
	}
	group := strField(sc.step.Raw, "workflow_group_key")
	wait := phpjson.NewObject()
	wait.Set("type", "workflow")
	wait.Set("step_index", int64(idx))
	wait.Set("wait_mode", sc.step.WaitMode)
	wait.Set("result_key", workflowdef.NilIfEmpty(sc.step.ResultKey))
	wait.Set("waiting_for", waitingFor)
	wait.Set("step_name", sc.step.Name)
	if group != "" {
		wait.Set("group_key", group)
	}
	if sc.step.WaitMode == queuetytype.WaitQuorum && sc.step.Quorum > 0 {
		wait.Set("quorum", int64(sc.step.Quorum))
	}
	sc.state.Set("_wait", wait)
	sc.state.Delete("_waiting_for_signal")
	sc.wf.Status = driver.WorkflowWaitingForWorkflows
	sc.wf.State = workflowstate.EncodeJSON(sc.state)
	if err := tx.WorkflowUpdate(ctx, sc.wf); err != nil {
		return err
	}
	details := phpjson.NewObject()
	details.Set("wait_type", "workflow")
	details.Set("waiting_for", waitingFor)
	details.Set("wait_mode", sc.step.WaitMode)
	details.Set("step_name", sc.step.Name)
	details.Set("group_key", workflowdef.NilIfEmpty(group))
	if sc.step.WaitMode == queuetytype.WaitQuorum && sc.step.Quorum > 0 {
		details.Set("quorum", int64(sc.step.Quorum))
	} else {
		details.Set("quorum", nil)
	}
	details.Set("result_key", workflowdef.NilIfEmpty(sc.step.ResultKey))
	wctx := phpjson.NewObject()
	wctx.Set("wait_type", "workflow")
	return tx.EventInsert(ctx, []*driver.WorkflowEvent{{
		WorkflowID: sc.wf.ID, StepIndex: idx, StepName: sc.step.Name, StepType: string(sc.step.Type),
		Handler: handlerWaitForWorkflows, Event: driver.EventWorkflowWaiting, Input: in.state,
		Output: workflowstate.EncodeJSON(details), StateBefore: in.state, StateAfter: workflowstate.EncodePublicJSON(sc.state),
		Context: workflowstate.EncodeJSON(wctx), CreatedAt: sc.now,
	}})
}

// wakeWaiters re-evaluates, inside the transaction that ended them, every
// wait on the ended workflows (ids are theirs), found with one query
// (Queuety's reconcile_waiting_for_workflows_for_dependency): the
// dependency rows are stamped satisfied when the dependency completed, and
// each waiting workflow is locked and settles, fails, or keeps waiting.
//
// Waits never miss an end: a wait being set up locks the workflows it
// waits on, so it either sees wf ended or its rows are committed before
// this transaction reads them. Other dependencies are read without locks
// (their ends are committed, or they will re-evaluate the wait themselves).
func (s *Service) wakeWaiters(ctx context.Context, tx driver.Tx, ended []endedWorkflow, ids []int64, now time.Time) error {
	waiters, err := tx.DependencyWaiters(ctx, ids)
	if err != nil || len(waiters) == 0 {
		return err
	}
	byID := make(map[int64]*driver.Workflow, len(ended))
	for _, x := range ended {
		byID[x.wf.ID] = x.wf
	}
	for _, w := range waiters {
		wf := byID[w.DependencyID]
		if wf.Status == driver.WorkflowCompleted {
			if err := tx.DependencySatisfy(ctx, w, wf.ID, now); err != nil {
				return err
			}
		}
		if err := s.reevaluateWait(ctx, tx, w, wf, now); err != nil {
			return err
		}
	}
	return nil
}

// reevaluateWait settles or fails one waiting workflow's wait when ended
// (one of its dependencies, locked by the caller) makes it decidable.
func (s *Service) reevaluateWait(ctx context.Context, tx driver.Tx, w driver.DependencyWaiter, ended *driver.Workflow, now time.Time) error {
	waiting, err := tx.WorkflowGet(ctx, w.WorkflowID, driver.LockUpdate)
	if errors.Is(err, queuetytype.ErrNotFound) {
		return tx.DependencyClear(ctx, w.WorkflowID, w.StepIndex)
	}
	if err != nil {
		return err
	}
	if waiting.Status != driver.WorkflowWaitingForWorkflows || waiting.CurrentStep != w.StepIndex {
		return tx.DependencyClear(ctx, w.WorkflowID, w.StepIndex)
	}
	_, err = s.decideWait(ctx, tx, waiting, ended, false, now)
	return err
}

// RecoverWaitLocked re-evaluates the wait of wf, a workflow waiting for
// workflows that the caller locked, as the end of one of its dependencies
// does (see reevaluateWait), for a wait whose dependencies ended without
// seeing it (the stranded-wait sweep): its dependency rows of completed
// workflows are stamped satisfied, and the wait settles, fails, or keeps
// waiting. It reports whether the wait settled or failed.
func (s *Service) RecoverWaitLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	if wf.Status != driver.WorkflowWaitingForWorkflows {
		return false, nil
	}
	outcome, err := s.decideWait(ctx, tx, wf, nil, true, now)
	return outcome == "satisfied" || outcome == "impossible", err
}

// decideWait evaluates the wait_for_workflows wait of waiting, locked by
// the caller, on its current step, and settles it, fails the workflow, or
// leaves it waiting. known, when set, is one of the workflows waited on,
// already read; the others are read without locks (their ends are
// committed, or they will re-evaluate the wait themselves). With stamp,
// the dependency rows of the completed ones are stamped satisfied first.
// It returns workflowstate.EvaluateWait's outcome, or "" when waiting is
// not parked on such a step.
func (s *Service) decideWait(ctx context.Context, tx driver.Tx, waiting *driver.Workflow, known *driver.Workflow, stamp bool, now time.Time) (string, error) {
	idx := waiting.CurrentStep
	state, err := workflowstate.DecodeObject("workflow state", waiting.State)
	if err != nil {
		return "", nil
	}
	steps, err := parseSteps(state)
	if err != nil || idx >= len(steps) || steps[idx].Type != queuetytype.StepWaitForWorkflows {
		return "", nil
	}
	step := steps[idx]
	ids := workflowstate.WaitIDs(step, state)
	var others []int64
	for _, id := range ids {
		if known == nil || id != known.ID {
			others = append(others, id)
		}
	}
	rows, err := tx.WorkflowGetMany(ctx, others, driver.LockNone)
	if err != nil {
		return "", err
	}
	byID := make(map[int64]*driver.Workflow, len(ids))
	if known != nil {
		byID[known.ID] = known
	}
	for _, r := range rows {
		byID[r.ID] = r
	}
	if stamp {
		w := driver.DependencyWaiter{WorkflowID: waiting.ID, StepIndex: idx}
		for _, id := range ids {
			if dep := byID[id]; dep != nil && dep.Status == driver.WorkflowCompleted {
				if err := tx.DependencySatisfy(ctx, w, id, now); err != nil {
					return "", err
				}
			}
		}
	}
	outcome := workflowstate.EvaluateWait(step, ids, byID)
	switch outcome {
	case "satisfied":
		if err := tx.DependencyClear(ctx, waiting.ID, idx); err != nil {
			return "", err
		}
		return outcome, s.SettleWait(ctx, tx, waiting, state, steps, idx, workflowstate.WaitOutput(step, ids, byID), now)
	case "impossible":
		if err := tx.DependencyClear(ctx, waiting.ID, idx); err != nil {
			return "", err
		}
		state.Delete("_wait")
		state.Delete("_waiting_for_signal")
		waiting.State = workflowstate.EncodeJSON(state)
		return outcome, s.FailWorkflowLocked(ctx, tx, waiting, 0, msgWaitUnsatisfiable, now)
	}
	return outcome, nil
}
