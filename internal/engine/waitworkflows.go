package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
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

// waitIDs resolves the workflow ids a wait step waits on: the listed ids,
// a started group, or a state key.
func waitIDs(step *stepDef, state *phpjson.Object) []int64 {
	raw := step.Raw
	if v, ok := raw.Get("workflow_ids"); ok && v != nil {
		if list, isList := listOf(v); isList {
			return normalizeIDs(list)
		}
	}
	if g := strField(raw, "workflow_group_key"); g != "" {
		gv, _ := state.Get("_workflow_groups")
		if groups, ok := gv.(*phpjson.Object); ok {
			if ids, ok := groups.Get(g); ok {
				return idsOf(ids)
			}
		}
		if ids, ok := state.Get(g); ok {
			return idsOf(ids)
		}
		return nil
	}
	key := strField(raw, "workflow_id_key")
	if key == "" {
		return nil
	}
	v, _ := state.Get(key)
	if v == nil {
		return nil
	}
	return idsOf(v)
}

func idsOf(v any) []int64 {
	if list, ok := listOf(v); ok {
		return normalizeIDs(list)
	}
	if id := toInt(v); id > 0 {
		return []int64{id}
	}
	return nil
}

// normalizeIDs keeps the positive ids, first occurrence first.
func normalizeIDs(list []any) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, v := range list {
		id := toInt(v)
		if id > 0 && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// evaluateWait is Queuety's evaluate_wait_for_workflows_state: satisfied,
// pending or impossible.
func evaluateWait(step *stepDef, ids []int64, rows map[int64]*driver.Workflow) string {
	mode := step.WaitMode
	if len(ids) == 0 {
		if mode == WaitAll {
			return "satisfied"
		}
		return "impossible"
	}
	quorum := max(step.Quorum, 1)
	completed, failed, active := 0, 0, 0
	for _, id := range ids {
		wf := rows[id]
		if wf == nil {
			return "impossible"
		}
		switch wf.Status {
		case driver.WorkflowCompleted:
			completed++
		case driver.WorkflowFailed, driver.WorkflowCancelled:
			failed++
		default:
			active++
		}
	}
	switch mode {
	case WaitAny:
		if completed >= 1 {
			return "satisfied"
		}
		if active == 0 {
			return "impossible"
		}
		return "pending"
	case WaitQuorum:
		if completed >= quorum {
			return "satisfied"
		}
		if completed+active < quorum {
			return "impossible"
		}
		return "pending"
	}
	if completed == len(ids) {
		return "satisfied"
	}
	if failed > 0 {
		return "impossible"
	}
	return "pending"
}

// waitOutput is what a satisfied wait merges: the completed workflows'
// public states under the result key (keyed by id, or the one state when
// waiting on one workflow), or merged into the state in dependency order.
func waitOutput(step *stepDef, ids []int64, rows map[int64]*driver.Workflow) *phpjson.Object {
	results := phpjson.NewObject()
	var order []int64
	for _, id := range ids {
		wf := rows[id]
		if wf == nil || wf.Status != driver.WorkflowCompleted {
			continue
		}
		st, err := DecodeObject("workflow state", wf.State)
		if err != nil {
			st = phpjson.NewObject()
		}
		results.Set(strconv.FormatInt(id, 10), PublicState(st))
		order = append(order, id)
		if step.WaitMode == WaitAny {
			break
		}
	}
	out := phpjson.NewObject()
	if step.ResultKey != "" {
		if len(ids) == 1 && len(order) == 1 {
			v, _ := results.Get(strconv.FormatInt(order[0], 10))
			out.Set(step.ResultKey, v)
			return out
		}
		out.Set(step.ResultKey, results)
		return out
	}
	for _, id := range order {
		v, _ := results.Get(strconv.FormatInt(id, 10))
		st := v.(*phpjson.Object)
		for _, k := range st.Keys() {
			x, _ := st.Get(k)
			out.Set(k, x)
		}
	}
	return out
}

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
	ctx, tx := context.Background(), sc.tx
	idx := sc.wf.CurrentStep
	in, err := sc.completePlaceholder()
	if err != nil {
		return err
	}
	ids := waitIDs(sc.step, sc.state)
	rows, err := lockDependencies(ctx, tx, ids)
	if err != nil {
		return err
	}
	switch evaluateWait(sc.step, ids, rows) {
	case "satisfied":
		if err := tx.DependencyClear(ctx, sc.wf.ID, idx); err != nil {
			return err
		}
		return sc.e.settleWait(ctx, tx, sc.wf, sc.state, sc.steps, idx, waitOutput(sc.step, ids, rows), sc.now)
	case "impossible":
		if err := tx.DependencyClear(ctx, sc.wf.ID, idx); err != nil {
			return err
		}
		sc.state.Delete("_wait")
		sc.state.Delete("_waiting_for_signal")
		sc.wf.State = EncodeJSON(sc.state)
		return sc.e.failWorkflowLocked(ctx, tx, sc.wf, 0, msgWaitUnsatisfiable, sc.now)
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
	if sc.step.WaitMode == WaitQuorum && sc.step.Quorum > 0 {
		wait.Set("quorum", int64(sc.step.Quorum))
	}
	sc.state.Set("_wait", wait)
	sc.state.Delete("_waiting_for_signal")
	sc.wf.Status = driver.WorkflowWaitingForWorkflows
	sc.wf.State = EncodeJSON(sc.state)
	if err := tx.WorkflowUpdate(ctx, sc.wf); err != nil {
		return err
	}
	details := phpjson.NewObject()
	details.Set("wait_type", "workflow")
	details.Set("waiting_for", waitingFor)
	details.Set("wait_mode", sc.step.WaitMode)
	details.Set("step_name", sc.step.Name)
	details.Set("group_key", workflowdef.NilIfEmpty(group))
	if sc.step.WaitMode == WaitQuorum && sc.step.Quorum > 0 {
		details.Set("quorum", int64(sc.step.Quorum))
	} else {
		details.Set("quorum", nil)
	}
	details.Set("result_key", workflowdef.NilIfEmpty(sc.step.ResultKey))
	wctx := phpjson.NewObject()
	wctx.Set("wait_type", "workflow")
	return tx.EventInsert(ctx, []*driver.WorkflowEvent{{
		WorkflowID: sc.wf.ID, StepIndex: idx, StepName: sc.step.Name, StepType: string(sc.step.Type),
		Handler: HandlerWaitForWorkflows, Event: driver.EventWorkflowWaiting, Input: in.state,
		Output: EncodeJSON(details), StateBefore: in.state, StateAfter: EncodeJSON(PublicState(sc.state)),
		Context: EncodeJSON(wctx), CreatedAt: sc.now,
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
func (e *Engine) wakeWaiters(ctx context.Context, tx driver.Tx, ended []endedWorkflow, ids []int64, now time.Time) error {
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
		if err := e.reevaluateWait(ctx, tx, w, wf, now); err != nil {
			return err
		}
	}
	return nil
}

// reevaluateWait settles or fails one waiting workflow's wait when ended
// (one of its dependencies, locked by the caller) makes it decidable.
func (e *Engine) reevaluateWait(ctx context.Context, tx driver.Tx, w driver.DependencyWaiter, ended *driver.Workflow, now time.Time) error {
	waiting, err := tx.WorkflowGet(ctx, w.WorkflowID, driver.LockUpdate)
	if errors.Is(err, ErrNotFound) {
		return tx.DependencyClear(ctx, w.WorkflowID, w.StepIndex)
	}
	if err != nil {
		return err
	}
	if waiting.Status != driver.WorkflowWaitingForWorkflows || waiting.CurrentStep != w.StepIndex {
		return tx.DependencyClear(ctx, w.WorkflowID, w.StepIndex)
	}
	state, err := DecodeObject("workflow state", waiting.State)
	if err != nil {
		return nil
	}
	steps, err := parseSteps(state)
	if err != nil || w.StepIndex >= len(steps) || steps[w.StepIndex].Type != queuetytype.StepWaitForWorkflows {
		return nil
	}
	step := steps[w.StepIndex]
	ids := waitIDs(step, state)
	var others []int64
	for _, id := range ids {
		if id != ended.ID {
			others = append(others, id)
		}
	}
	rows, err := tx.WorkflowGetMany(ctx, others, driver.LockNone)
	if err != nil {
		return err
	}
	byID := map[int64]*driver.Workflow{ended.ID: ended}
	for _, r := range rows {
		byID[r.ID] = r
	}
	switch evaluateWait(step, ids, byID) {
	case "satisfied":
		if err := tx.DependencyClear(ctx, waiting.ID, w.StepIndex); err != nil {
			return err
		}
		return e.settleWait(ctx, tx, waiting, state, steps, w.StepIndex, waitOutput(step, ids, byID), now)
	case "impossible":
		if err := tx.DependencyClear(ctx, waiting.ID, w.StepIndex); err != nil {
			return err
		}
		state.Delete("_wait")
		state.Delete("_waiting_for_signal")
		waiting.State = EncodeJSON(state)
		return e.failWorkflowLocked(ctx, tx, waiting, 0, msgWaitUnsatisfiable, now)
	}
	return nil
}
