package advance

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file runs Queuety's compensations (compensate_with,
// compensate_on_failure). Each completed step that has a compensation
// handler pushes {step_index, handler, payload, state} on
// _compensation_stack, the public state as it was right after the step.
// When the workflow is cancelled, or fails or passes its deadline with
// _compensate_on_failure, the handlers run newest first.
//
// Queuety runs them inline, in the process that failed the workflow. The
// Go engine runs them durably: one job at a time, each enqueued in the
// transaction that ended the previous one (or that ended the workflow),
// so a crash resumes at the compensation that was running and every
// compensation completes once. _compensation_next holds the index of the
// one running; when the stack is done the state gets Queuety's
// _compensated and _compensation_cause. A compensation whose attempts run
// out is logged (compensation_failed) and the next one runs, as in
// Queuety.

// Compensation reasons, as Queuety records them in _compensation_cause.
const (
	CompensateFailure  = "failure"
	CompensateDeadline = "deadline"
	CompensateCancel   = "cancel"
)

// pushCompensation records a completed step on the compensation stack
// when it has a compensation handler (Queuety's
// push_compensation_snapshot).
func (s *Service) pushCompensation(state *phpjson.Object, step *stepDef, idx int) {
	if step == nil {
		return
	}
	h := s.handlerDef(step.Raw, "compensation")
	if h == nil {
		return
	}
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	entry := phpjson.NewObject()
	entry.Set("step_index", int64(idx))
	class, _ := h.Get("class")
	entry.Set("handler", class)
	payload, _ := h.Get("payload")
	entry.Set("payload", payload)
	entry.Set("state", workflowstate.PublicState(state))
	state.Set("_compensation_stack", append(append([]any(nil), stack...), entry))
}

// handlerDef is Queuety's handler_definition of o[key]: {class, payload}
// for a name or a {class|handler, payload|config} object, or nil.
func (s *Service) handlerDef(o *phpjson.Object, key string) *phpjson.Object {
	name := handlerRef(o, key)
	if name == "" {
		return nil
	}
	payload := any([]any{})
	if v, _ := o.Get(key); v != nil {
		if ho, ok := v.(*phpjson.Object); ok {
			for _, k := range []string{"payload", "config"} {
				if p, ok := ho.Get(k); ok {
					if po, isObj := p.(*phpjson.Object); isObj {
						payload = po
					}
					break
				}
			}
		}
	}
	out := s.core.HandlerDefinition(name)
	out.Set("payload", payload)
	return out
}

// ShouldCompensate reports whether a workflow ending for reason runs its
// compensations: always on cancel, on failure and deadline only with
// _compensate_on_failure; never twice.
func ShouldCompensate(state *phpjson.Object, reason string) bool {
	if workflowstate.Truthy(state, "_compensated") {
		return false
	}
	if _, running := state.Get("_compensation_next"); running {
		return false
	}
	return reason == CompensateCancel || workflowstate.Truthy(state, "_compensate_on_failure")
}

// StartCompensation begins a locked, just-ended workflow's compensations
// (see the file comment). It changes state and wf.State; the caller
// writes the workflow row after it.
func (s *Service) StartCompensation(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, reason string, now time.Time) error {
	if !ShouldCompensate(state, reason) {
		return nil
	}
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	if len(stack) == 0 {
		state.Set("_compensated", true)
		state.Set("_compensation_cause", reason)
		wf.State = workflowstate.EncodeJSON(state)
		return nil
	}
	state.Set("_compensation_next", int64(len(stack)-1))
	wf.State = workflowstate.EncodeJSON(state)
	return s.enqueueCompensation(ctx, tx, wf, state, stack, len(stack)-1, reason, now)
}

// enqueueCompensation enqueues compensation index of the stack as a job:
// handler = the compensation handler, payload = the step's state snapshot
// and the handler's payload, plus the engine's marker. A handler no worker
// of this process registered goes to Queuety PHP's bridge class when the
// client has a PHP workflow callback queue (phpbridge.go).
func (s *Service) enqueueCompensation(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, stack []any, index int, reason string, now time.Time) error {
	entry, _ := stack[index].(*phpjson.Object)
	handler := ""
	if entry != nil {
		handler = strField(entry, "handler")
	}
	if handler == "" {
		return s.finishCompensation(ctx, tx, wf, state, index, reason, now)
	}
	if s.phpWorkflowCallback(handler) {
		return tx.JobInsert(ctx, []*driver.Job{s.phpWorkflowCallbackJob(wf, "compensation", handler, index, reason, now)})
	}
	return tx.JobInsert(ctx, []*driver.Job{compensationJob(wf, state, entry, index, reason, nil, now)})
}

// compensationJob is the job of compensation index (entry, a stack entry
// with a handler) for the Go worker that has its handler. plan is set for
// a chain the PHP bridge started for a workflow PHP ended
// (foreignends.go).
func compensationJob(wf *driver.Workflow, state, entry *phpjson.Object, index int, reason string, plan *sweepPlan, now time.Time) *driver.Job {
	snap, _ := entry.Get("state")
	payload := phpjson.NewObject()
	if so, ok := snap.(*phpjson.Object); ok {
		payload = so.Clone()
	}
	if extra, ok := mustObject(entry, "payload"); ok {
		for _, k := range extra.Keys() {
			if !workflowstate.IsPrivateKey(k) {
				v, _ := extra.Get(k)
				payload.Set(k, v)
			}
		}
	}
	marker := phpjson.NewObject()
	marker.Set("kind", "compensation")
	marker.Set("workflow_id", wf.ID)
	marker.Set("index", int64(index))
	marker.Set("reason", reason)
	if plan != nil {
		plan.encode(marker)
	}
	payload.Set(callbackKey, marker)
	return &driver.Job{
		Queue: workflowstate.Queue(state), Handler: strField(entry, "handler"), Payload: workflowstate.EncodeJSON(payload), Priority: workflowstate.Priority(state),
		Status: driver.JobPending, MaxAttempts: workflowstate.MaxAttempts(state), AvailableAt: rowtime.Floor(now), CostUnits: 1,
		CreatedAt: rowtime.Floor(now),
	}
}

// compensationMarker returns the workflow, stack index and reason of a
// compensation job's payload, or ok false.
func compensationMarker(payload *phpjson.Object) (wfID int64, index int, reason string, ok bool) {
	if payload == nil {
		return 0, 0, "", false
	}
	m, isObj := mustObject(payload, callbackKey)
	if !isObj || strField(m, "kind") != "compensation" {
		return 0, 0, "", false
	}
	return intValue(m, "workflow_id"), int(intValue(m, "index")), strField(m, "reason"), true
}

// CompensationEnded moves a workflow's compensations on after the job of
// compensation index ended (payload and handler are the job's) (completed, or buried: Queuety logs a failed
// compensation and goes on): the next one is enqueued, or the workflow is
// marked compensated. It runs in the transaction that ended the job, and
// only once per index.
func (s *Service) CompensationEnded(ctx context.Context, tx driver.Tx, payload *phpjson.Object, handler, failedMsg string, now time.Time) error {
	wfID, index, reason, ok := compensationMarker(payload)
	if !ok {
		return nil
	}
	wf, err := tx.WorkflowGet(ctx, wfID, driver.LockUpdate)
	if err != nil {
		if err == queuetytype.ErrNotFound {
			return nil
		}
		return err
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return nil
	}
	next, running := state.Get("_compensation_next")
	if !running || workflowstate.ToInt(next) != int64(index) {
		return nil // not this compensation's turn (already moved on)
	}
	if failedMsg != "" {
		if err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: handler, Queue: workflowstate.Queue(state),
			Event: driver.LogDebug, ErrorMessage: failedMsg,
			Context: workflowstate.EncodeJSON(map[string]any{"type": "compensation_failed", "reason": reason}), CreatedAt: now}}); err != nil {
			return err
		}
	}
	if plan, ok := sweepPlanOf(payload); ok {
		return s.sweptCompensationEnded(ctx, tx, wf, state, plan, reason, now)
	}
	if index == 0 {
		return s.finishCompensation(ctx, tx, wf, state, index, reason, now)
	}
	state.Set("_compensation_next", int64(index-1))
	wf.State = workflowstate.EncodeJSON(state)
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	if index-1 >= len(stack) {
		return s.finishCompensation(ctx, tx, wf, state, index-1, reason, now)
	}
	return s.enqueueCompensation(ctx, tx, wf, state, stack, index-1, reason, now)
}

// finishCompensation marks the workflow compensated (Queuety's
// _compensated and _compensation_cause) once the last compensation ended,
// or moves past an entry it cannot run.
func (s *Service) finishCompensation(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, index int, reason string, now time.Time) error {
	if index > 0 {
		raw, _ := state.Get("_compensation_stack")
		stack, _ := workflowstate.ListOf(raw)
		state.Set("_compensation_next", int64(index-1))
		wf.State = workflowstate.EncodeJSON(state)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		return s.enqueueCompensation(ctx, tx, wf, state, stack, index-1, reason, now)
	}
	state.Delete("_compensation_next")
	state.Set("_compensated", true)
	state.Set("_compensation_cause", reason)
	wf.State = workflowstate.EncodeJSON(state)
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	if reason == CompensateCancel {
		return s.EnqueueCallback(ctx, tx, wf, state, "_on_cancel", "cancel", now)
	}
	return nil
}

// CompensationCount is the number of entries on the compensation stack.
func CompensationCount(state *phpjson.Object) int {
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	return len(stack)
}
