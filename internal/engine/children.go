package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
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

// childDefinition is what materializeChild needs from a definition.
type childSpec struct {
	def       *phpjson.Object // Queuety's runtime definition shape
	initial   *phpjson.Object // public initial state
	parentID  int64           // run_workflow parent, or 0
	parentIdx int
	startedBy int64 // start_workflows parent, or 0
	startedAt int
}

// materializeChild builds a child's stored state in the key order of
// Queuety's materialize_defined_workflow_state and the engine Definition
// its row is written from.
func materializeChild(c childSpec) (*preparedWorkflow, error) {
	d := c.def
	state := c.initial
	stepsV, _ := d.Get("steps")
	steps, ok := stepsV.([]any)
	if !ok {
		steps = []any{}
	}
	state.Set("_steps", steps)
	queue := strField(d, "queue")
	if queue == "" {
		queue = DefaultQueue
	}
	state.Set("_queue", queue)
	prio, _ := d.Get("priority")
	state.Set("_priority", toInt(prio))
	ma, has := d.Get("max_attempts")
	maxAttempts := int64(DefaultMaxAttempts)
	if has {
		maxAttempts = max(1, toInt(ma))
	}
	state.Set("_max_attempts", maxAttempts)
	if h := handlerDef(d, "cancel_handler"); h != nil {
		state.Set("_on_cancel", h)
	}
	if n, ok := d.Get("prune_after"); ok {
		if p, isInt := n.(int64); isInt && p > 0 {
			state.Set("_prune_state_after", p)
			state.Set("_step_outputs", []any{})
		}
	}
	var deadline int64
	if n, ok := d.Get("deadline_seconds"); ok {
		if s, isInt := n.(int64); isInt && s > 0 {
			deadline = s
			state.Set("_deadline_seconds", s)
		}
	}
	if h := handlerDef(d, "deadline_handler"); h != nil {
		state.Set("_on_deadline", h)
	}
	if v := strField(d, "definition_version"); v != "" {
		state.Set("_definition_version", v)
	}
	if v := strField(d, "definition_hash"); v != "" {
		state.Set("_definition_hash", v)
	}
	if bv, ok := d.Get("workflow_budget"); ok {
		if bo, isObj := bv.(*phpjson.Object); isObj {
			budget := phpjson.NewObject()
			for _, k := range budgetKeys {
				if n, ok := bo.Get(k); ok {
					if v, isInt := n.(int64); isInt && v > 0 {
						budget.Set(k, v)
					}
				}
			}
			if budget.Len() > 0 {
				state.Set("_workflow_budget", budget)
				counters := phpjson.NewObject()
				counters.Set("transitions", int64(0))
				counters.Set("cost_units", int64(0))
				counters.Set("started_workflows", int64(0))
				state.Set("_workflow_counters", counters)
				if l, _ := budget.Get("max_state_bytes"); l != nil && int64(len(EncodeJSON(c.initial))) > toInt(l) {
					return nil, invalidf("Workflow initial state exceeds configured max_state_bytes budget of %d.", toInt(l))
				}
			}
		}
	}
	if truthy(d, "compensate_on_failure") {
		state.Set("_compensate_on_failure", true)
	}
	if c.startedBy != 0 {
		state.Set("_started_by_workflow_id", c.startedBy)
		state.Set("_started_by_step_index", int64(c.startedAt))
	}
	parsed, err := parseSteps(state)
	if err != nil {
		return nil, fmt.Errorf("child workflow: malformed step definitions: %w", err)
	}
	if len(parsed) == 0 {
		return nil, invalidf("child workflow has no steps")
	}
	name := strField(d, "name")
	if name == "" {
		name = "workflow"
	}
	def := Definition{Name: name, Steps: steps, Queue: queue, DeadlineSecs: deadline}
	p := &preparedWorkflow{def: def, state: state, stateJSON: EncodeJSON(state), steps: parsed, queue: queue, parentID: c.parentID}
	if c.parentID != 0 {
		p.parentStep = ptr(c.parentIdx)
	}
	return p, nil
}

// handlerDef is Queuety's handler_definition of d[key]: {class, payload},
// or nil.
func handlerDef(d *phpjson.Object, key string) *phpjson.Object {
	v, _ := d.Get(key)
	var class string
	payload := phpjson.NewObject()
	switch h := v.(type) {
	case string:
		class = strings.TrimSpace(h)
	case *phpjson.Object:
		class = strField(h, "class")
		if class == "" {
			class = strField(h, "handler")
		}
		for _, k := range []string{"payload", "config"} {
			if p, ok := h.Get(k); ok {
				if po, isObj := p.(*phpjson.Object); isObj {
					payload = po
				}
				break
			}
		}
	}
	if class == "" {
		return nil
	}
	o := phpjson.NewObject()
	o.Set("class", class)
	o.Set("payload", payload)
	return o
}

// startRunWorkflow runs a run_workflow placeholder: it starts the child
// with the parent's public state; the parent stays on this step until the
// child ends.
func (sc *stepCtx) startRunWorkflow() error {
	ctx, tx := context.Background(), sc.tx
	in := sc.inputs()
	raw := sc.step.raw
	def := phpjson.NewObject()
	name := strField(raw, "workflow_name")
	if name == "" {
		name = "run_workflow"
	}
	def.Set("name", name)
	steps, _ := raw.Get("workflow_steps")
	def.Set("steps", steps)
	queue := strField(raw, "workflow_queue")
	if queue == "" {
		queue = stateQueue(sc.state)
	}
	def.Set("queue", queue)
	prio := int64(statePriority(sc.state))
	if v, ok := raw.Get("workflow_priority"); ok && v != nil {
		prio = toInt(v)
	}
	def.Set("priority", prio)
	maxAttempts := int64(stateMaxAttempts(sc.state))
	if v, ok := raw.Get("workflow_max_attempts"); ok && v != nil {
		maxAttempts = toInt(v)
	}
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	def.Set("max_attempts", maxAttempts)
	p, err := materializeChild(childSpec{def: def, initial: PublicState(sc.state), parentID: sc.wf.ID, parentIdx: sc.wf.CurrentStep})
	if err != nil {
		return NonRetryable(fmt.Errorf("run_workflow step '%s': %w", sc.step.Name, err))
	}
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	if _, err := sc.e.insertWorkflow(ctx, tx, p, sc.now); err != nil {
		return err
	}
	w := &writes{events: []*driver.WorkflowEvent{sc.startedEvent(in)}, logs: sc.logs()}
	return w.flush(ctx, tx)
}

// startWorkflows runs a start_workflows placeholder: one independent
// workflow per item, then the step completes with their ids under the
// result key (and in _workflow_groups under the group key).
func (sc *stepCtx) startWorkflows() error {
	ctx, tx := context.Background(), sc.tx
	raw, idx := sc.step.raw, sc.wf.CurrentStep
	itemsKey := strField(raw, "items_key")
	var items []any
	if itemsKey != "" {
		v, _ := sc.state.Get(itemsKey)
		if v != nil {
			var ok bool
			if items, ok = listOf(v); !ok {
				return NonRetryable(fmt.Errorf("Start step '%s' requires state['%s'] to be an array.", sc.step.Name, itemsKey))
			}
		}
	}
	defV, _ := raw.Get("workflow_definition")
	def, ok := defV.(*phpjson.Object)
	if stepsV, _ := def.Get("steps"); !ok || !isList(stepsV) {
		return NonRetryable(fmt.Errorf("Start step '%s' is missing a valid workflow definition.", sc.step.Name))
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
	if truthy(raw, "inherit_state") {
		base = PublicState(sc.state)
		base.Delete(itemsKey)
		base.Delete(resultKey)
	}
	if limit := budgetLimit(sc.state, "max_started_workflows"); limit > 0 && counter(sc.state, "started_workflows")+int64(len(items)) > limit {
		return constraintf("Start step '%s' would exceed max_started_workflows budget of %d.", sc.step.Name, limit)
	}
	ids := make([]any, 0, len(items))
	for i, item := range items {
		child := base.Clone()
		if o, isObj := item.(*phpjson.Object); isObj {
			for _, k := range o.Keys() {
				if _, numeric := canonicalIndex(k); !numeric && !IsPrivateKey(k) {
					v, _ := o.Get(k)
					child.Set(k, v)
				}
			}
		} else if !isList(item) {
			child.Set(payloadKey, item)
		}
		child.Set("start_item_index", int64(i))
		p, err := materializeChild(childSpec{def: def, initial: child, startedBy: sc.wf.ID, startedAt: idx})
		if err != nil {
			return NonRetryable(fmt.Errorf("start step '%s': %w", sc.step.Name, err))
		}
		id, err := sc.e.insertWorkflow(ctx, tx, p, sc.now)
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
	bumpCounter(sc.state, "started_workflows", int64(len(ids)))
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	w := &writes{}
	if err := sc.finalizeInto(w, out); err != nil {
		return err
	}
	return w.flush(ctx, tx)
}

// canonicalIndex reports whether k is a key PHP stores as an integer.
func canonicalIndex(k string) (int, bool) {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
		n = n*10 + int(k[i]-'0')
	}
	return n, true
}

// afterTerminal runs what a workflow's end sets off, inside the
// transaction that ended it: a run_workflow parent moves on (or fails),
// and workflows waiting on it get a wait_for_workflows job that
// re-evaluates their wait, durably and exactly once per end.
func (e *Engine) afterTerminal(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) error {
	if wf.ParentWorkflowID != 0 && wf.ParentStepIndex != nil {
		if err := e.resumeParent(ctx, tx, wf, state, now); err != nil {
			return err
		}
	}
	return e.wakeWaiters(ctx, tx, wf, now)
}

// resumeParent moves a run_workflow parent past its step when the child
// completed, or fails it when the child failed or was cancelled. A parent
// that is no longer on that step (cancelled, failed by its deadline,
// retried) is left alone.
func (e *Engine) resumeParent(ctx context.Context, tx driver.Tx, child *driver.Workflow, childState *phpjson.Object, now time.Time) error {
	parent, err := tx.WorkflowGet(ctx, child.ParentWorkflowID, driver.LockUpdate)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	idx := *child.ParentStepIndex
	if (parent.Status != driver.WorkflowRunning && parent.Status != driver.WorkflowPaused) || parent.CurrentStep != idx {
		return nil
	}
	pstate, err := DecodeObject("workflow state", parent.State)
	if err != nil {
		return nil
	}
	steps, err := parseSteps(pstate)
	if err != nil || idx >= len(steps) || steps[idx].Type != "run_workflow" {
		return nil
	}
	switch child.Status {
	case driver.WorkflowCompleted:
		if childState == nil {
			if childState, err = DecodeObject("workflow state", child.State); err != nil {
				childState = phpjson.NewObject()
			}
		}
		for _, k := range childState.Keys() {
			if !IsPrivateKey(k) {
				v, _ := childState.Get(k)
				pstate.Set(k, v)
			}
		}
		if err := countTransition(pstate); err != nil {
			parent.State = EncodeJSON(pstate)
			return e.failWorkflowLocked(ctx, tx, parent, 0, errorMessage(err), now)
		}
		w := &writes{}
		e.advance(w, parent, pstate, steps, idx+1, now)
		return w.flush(ctx, tx)
	case driver.WorkflowFailed, driver.WorkflowCancelled:
		msg := fmt.Sprintf("Child workflow %d failed: %s", child.ID, child.ErrorMessage)
		if child.Status == driver.WorkflowCancelled {
			msg = fmt.Sprintf("Child workflow %d was cancelled.", child.ID)
		}
		return e.failWorkflowLocked(ctx, tx, parent, 0, msg, now)
	}
	return nil
}

// errorMessage is the text of an error without the NonRetryable wrapper.
func errorMessage(err error) string {
	msg, _, _ := describeError(err)
	return msg
}
