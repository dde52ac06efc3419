package advance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file runs the steps that start other workflows: run_workflow (a
// child the parent waits for, linked by parent_workflow_id and
// parent_step_index) and start_workflows (independent workflows, one per
// item, whose ids go into the parent's state). Children are written in the
// same transaction that completes the step's placeholder job, so a step
// starts its children exactly once.
//
// When a child of a run_workflow step completes, its public state is
// merged into the parent and the parent moves on, in the child's
// transaction (as Queuety does). Queuety leaves the parent waiting for good
// when a child fails or is cancelled; the Go engine fails the parent
// instead ("Child workflow N failed: ..."), so that its deadline, retry and
// failure handling apply.

// startRunWorkflow runs a run_workflow placeholder: it starts the child
// with the parent's public state; the parent stays on this step until the
// child ends.
func (sc *stepCtx) startRunWorkflow() error {
	ctx, tx := sc.ctx, sc.tx
	in := sc.inputs()
	raw := sc.step.Raw
	stepsV, _ := raw.Get("workflow_steps")
	childSteps, _ := stepsV.([]any)
	spec := ChildSpec{Name: strField(raw, "workflow_name"), Steps: childSteps, Queue: strField(raw, "workflow_queue"),
		Priority: workflowstate.Priority(sc.state), MaxAttempts: workflowstate.MaxAttempts(sc.state),
		ParentWorkflowID: sc.wf.ID, ParentStepIndex: sc.wf.CurrentStep}
	if spec.Name == "" {
		spec.Name = "run_workflow"
	}
	if spec.Queue == "" {
		spec.Queue = workflowstate.Queue(sc.state)
	}
	if p, ok := workflowstate.PriorityAt(raw, "workflow_priority"); ok {
		spec.Priority = p
	}
	if v, ok := raw.Get("workflow_max_attempts"); ok && v != nil {
		spec.MaxAttempts = jobruntime.ClampAttempts(workflowstate.ToInt(v))
	}
	if spec.MaxAttempts <= 0 {
		spec.MaxAttempts = queuetytype.DefaultMaxAttempts
	}
	prepare, err := sc.s.core.Child(spec)
	if err != nil {
		return sc.s.final(fmt.Errorf("run_workflow step '%s': %w", sc.step.Name, err))
	}
	insert, err := prepare(workflowstate.PublicState(sc.state))
	if err != nil {
		return sc.s.final(fmt.Errorf("run_workflow step '%s': %w", sc.step.Name, err))
	}
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	if _, err := insert(ctx, tx, sc.now); err != nil {
		return err
	}
	w := &Writes{events: []*driver.WorkflowEvent{sc.startedEvent(in)}, logs: sc.logs()}
	return w.Flush(ctx, tx)
}

// startWorkflows runs a start_workflows placeholder: one independent
// workflow per item, then the step completes with their ids under the
// result key (and in _workflow_groups under the group key).
func (sc *stepCtx) startWorkflows() error {
	ctx, tx := sc.ctx, sc.tx
	raw, idx := sc.step.Raw, sc.wf.CurrentStep
	itemsKey := strField(raw, "items_key")
	var items []any
	if itemsKey != "" {
		v, _ := sc.state.Get(itemsKey)
		if v != nil {
			var ok bool
			if items, ok = workflowstate.ListOf(v); !ok {
				return sc.s.final(fmt.Errorf("Start step '%s' requires state['%s'] to be an array.", sc.step.Name, itemsKey))
			}
		}
	}
	defV, _ := raw.Get("workflow_definition")
	defObj, _ := defV.(*phpjson.Object)
	stepsV, _ := defObj.Get("steps")
	if defObj == nil || !workflowstate.IsList(stepsV) {
		return sc.s.final(fmt.Errorf("Start step '%s' is missing a valid workflow definition.", sc.step.Name))
	}
	prepare, err := sc.s.core.Child(ChildSpec{Runtime: defObj, StartedByWorkflowID: sc.wf.ID, StartedByStepIndex: idx})
	if err != nil {
		return sc.s.final(fmt.Errorf("start step '%s': %w", sc.step.Name, err))
	}
	resultKey := strField(raw, "result_key")
	if resultKey == "" {
		resultKey = "started_workflow_ids"
	}
	payloadKey := strField(raw, "payload_key")
	if payloadKey == "" {
		payloadKey = "item"
	}
	groupKey := strField(raw, "group_key")
	base := phpjson.NewObject()
	if workflowstate.Truthy(raw, "inherit_state") {
		base = workflowstate.PublicState(sc.state)
		base.Delete(itemsKey)
		base.Delete(resultKey)
	}
	if limit := workflowstate.BudgetLimit(sc.state, "max_started_workflows"); limit > 0 && workflowstate.Counter(sc.state, "started_workflows")+int64(len(items)) > limit {
		return sc.s.constraintf("Start step '%s' would exceed max_started_workflows budget of %d.", sc.step.Name, limit)
	}
	ids := make([]any, 0, len(items))
	for i, item := range items {
		child := base.Clone()
		if o, isObj := item.(*phpjson.Object); isObj {
			for _, k := range o.Keys() {
				if _, numeric := phpjson.IntKey(k); !numeric && !workflowstate.IsPrivateKey(k) {
					v, _ := o.Get(k)
					child.Set(k, v)
				}
			}
		} else if !workflowstate.IsList(item) {
			child.Set(payloadKey, item)
		}
		child.Set("start_item_index", int64(i))
		insert, err := prepare(child)
		if err != nil {
			return sc.s.final(fmt.Errorf("start step '%s': %w", sc.step.Name, err))
		}
		id, err := insert(ctx, tx, sc.now)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	out := phpjson.NewObject()
	out.Set(resultKey, ids)
	if groupKey != "" {
		gv, _ := sc.state.Get("_workflow_groups")
		groups, isObj := gv.(*phpjson.Object)
		if isObj {
			groups = groups.Clone()
		} else {
			groups = phpjson.NewObject()
		}
		groups.Set(groupKey, ids)
		out.Set("_workflow_groups", groups)
	}
	if len(ids) > 0 {
		delta := phpjson.NewObject() // recorded in the step's output, as Queuety does
		delta.Set("started_workflows", int64(len(ids)))
		out.Set("_workflow_budget_delta", delta)
	}
	workflowstate.BumpCounter(sc.state, "started_workflows", int64(len(ids)))
	return sc.finalize(out)
}

// AfterTerminal runs what a workflow's end sets off, inside the
// transaction that ended it: a run_workflow parent moves on (or fails),
// and the waits on it are re-evaluated (see wakeWaiters), so both happen
// exactly when the end commits.
func (s *Service) AfterTerminal(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) error {
	return s.afterTerminalAll(ctx, tx, []endedWorkflow{{wf: wf, state: state}}, now)
}

// afterTerminalAll is afterTerminal for several workflows that ended in one
// transaction: the waits on all of them are found with one query.
func (s *Service) afterTerminalAll(ctx context.Context, tx driver.Tx, ended []endedWorkflow, now time.Time) error {
	ids := make([]int64, len(ended))
	for i, x := range ended {
		ids[i] = x.wf.ID
		if x.wf.ParentWorkflowID != 0 && x.wf.ParentStepIndex != nil {
			if err := s.resumeParent(ctx, tx, x.wf, x.state, now); err != nil {
				return err
			}
		}
	}
	return s.wakeWaiters(ctx, tx, ended, ids, now)
}

// resumeParent moves a run_workflow parent past its step when the child
// completed, or fails it when the child failed or was cancelled. A parent
// that is no longer on that step (cancelled, failed by its deadline,
// retried) is left alone.
func (s *Service) resumeParent(ctx context.Context, tx driver.Tx, child *driver.Workflow, childState *phpjson.Object, now time.Time) error {
	parent, err := tx.WorkflowGet(ctx, child.ParentWorkflowID, driver.LockUpdate)
	if errors.Is(err, queuetytype.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	idx := *child.ParentStepIndex
	if (parent.Status != driver.WorkflowRunning && parent.Status != driver.WorkflowPaused) || parent.CurrentStep != idx {
		return nil
	}
	pstate, err := workflowstate.DecodeObject("workflow state", parent.State)
	if err != nil {
		return nil
	}
	steps, err := parseSteps(pstate)
	if err != nil || idx >= len(steps) || steps[idx].Type != queuetytype.StepRunWorkflow {
		return nil
	}
	switch child.Status {
	case driver.WorkflowCompleted:
		if childState == nil {
			if childState, err = workflowstate.DecodeObject("workflow state", child.State); err != nil {
				childState = phpjson.NewObject()
			}
		}
		for _, k := range childState.Keys() {
			if !workflowstate.IsPrivateKey(k) {
				v, _ := childState.Get(k)
				pstate.Set(k, v)
			}
		}
		s.pushCompensation(pstate, steps[idx], idx)
		if err := s.countTransition(pstate); err != nil {
			parent.State = workflowstate.EncodeJSON(pstate)
			return s.FailWorkflowLocked(ctx, tx, parent, 0, err.Error(), now)
		}
		w := &Writes{}
		s.advance(w, parent, pstate, steps, idx+1, now)
		return w.Flush(ctx, tx)
	case driver.WorkflowFailed, driver.WorkflowCancelled:
		msg := fmt.Sprintf("Child workflow %d failed: %s", child.ID, child.ErrorMessage)
		if child.Status == driver.WorkflowCancelled {
			msg = fmt.Sprintf("Child workflow %d was cancelled.", child.ID)
		}
		return s.FailWorkflowLocked(ctx, tx, parent, 0, msg, now)
	}
	return nil
}
