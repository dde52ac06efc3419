package queuety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Signal sends a named signal with a payload (anything that encodes as a
// JSON object; nil for none) to a workflow. The signal is stored in
// Queuety's signals table whatever the workflow is doing. If the workflow
// is waiting for it, the wait settles in the same transaction and the next
// step is enqueued. A signal sent before the workflow reaches its wait
// counts when it gets there. A signal that can no longer matter (the
// workflow ended, or its wait timed out first) is stored, logged as
// ignored, and changes nothing. It returns ErrNotFound for an unknown
// workflow.
func (c *Client) Signal(ctx context.Context, workflowID int64, name string, payload any) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("queuety: signal: %w", invalidf("signal name must be 1-255 characters"))
	}
	body, err := toObject("signal payload", payload)
	if err != nil {
		return fmt.Errorf("queuety: signal %q: %w", name, err)
	}
	raw := encodeJSON(body)
	err = c.store.InTx(ctx, func(tx driver.Tx) error {
		now := c.clock.Now()
		wf, err := tx.WorkflowGet(ctx, workflowID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: workflowID, Name: name, Payload: raw, ReceivedAt: now}); err != nil {
			return err
		}
		state, err := decodeObject("workflow state", wf.State)
		if err != nil {
			return err
		}
		steps, err := parseSteps(state)
		if err != nil {
			return err
		}
		ignore := func(reason string) error {
			return tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{"type": "signal_ignored", "signal": name, "reason": reason})})
		}
		if wf.Status.Terminal() {
			return ignore("workflow is " + string(wf.Status))
		}
		if wf.Status == WorkflowWaitingForSignal && wf.CurrentStep < len(steps) {
			step := steps[wf.CurrentStep]
			if step.Type == "wait_for_signal" && contains(step.SignalNames, name) {
				matched, err := c.engine.matchSignals(ctx, tx, wf.ID, state, step)
				if err != nil || matched == nil {
					return err
				}
				if !wf.WaitDeadlineAt.IsZero() {
					if err := tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{
						"type": "timer_cancelled", "reason": "signal " + name + " arrived first", "timeout_at": isoTime(wf.WaitDeadlineAt)})}); err != nil {
						return err
					}
				}
				return c.engine.settleWait(ctx, tx, wf, state, steps, wf.CurrentStep, signalOutput(step, matched, false), now)
			}
		}
		if v, ok := state.Get(TimedOutKey(name)); ok && v == true {
			return ignore("the wait for it timed out first")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queuety: signal %q to workflow %d: %w", name, workflowID, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FireWaitTimeouts settles up to limit signal waits whose timeout has
// passed: the workflow continues with TimedOutKey(...) = true. Candidates
// are read with SKIP LOCKED and re-checked under the row lock, which a
// competing Signal also takes, so exactly one of the signal and the timer
// wins. It returns how many waits it timed out and whether a full batch
// was found.
func (e *Engine) FireWaitTimeouts(ctx context.Context, limit int) (int, bool, error) {
	var n int
	var more bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		n = 0
		now := e.c.clock.Now()
		wfs, err := tx.WorkflowFindWaitExpired(ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		more = len(wfs) >= limit
		for _, wf := range wfs {
			if wf.Status != WorkflowWaitingForSignal || wf.WaitDeadlineAt.IsZero() || now.Before(wf.WaitDeadlineAt) {
				continue
			}
			state, err := decodeObject("workflow state", wf.State)
			if err != nil {
				return err
			}
			steps, err := parseSteps(state)
			if err != nil {
				return err
			}
			if wf.CurrentStep >= len(steps) || steps[wf.CurrentStep].Type != "wait_for_signal" {
				continue
			}
			step := steps[wf.CurrentStep]
			if err := tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{
				"type": "signal_timed_out", "signals": stringsToAny(step.SignalNames), "timeout_at": isoTime(wf.WaitDeadlineAt)})}); err != nil {
				return err
			}
			if err := e.settleWait(ctx, tx, wf, state, steps, wf.CurrentStep, signalOutput(step, nil, true), now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: fire wait timeouts: %w", err)
	}
	return n, more, nil
}

// lockWorkflow runs fn on a locked workflow and its decoded state.
func (c *Client) lockWorkflow(ctx context.Context, id int64, fn func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error) error {
	return c.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		state, err := decodeObject("workflow state", wf.State)
		if err != nil {
			return err
		}
		steps, err := parseSteps(state)
		if err != nil {
			return fmt.Errorf("workflow %d: malformed step definitions: %w", id, err)
		}
		return fn(tx, wf, state, steps, c.clock.Now())
	})
}

// PauseWorkflow pauses a running workflow: the step in flight finishes and
// its output is merged, but the next step is not enqueued until
// ResumeWorkflow. It returns ErrInvalidState unless the workflow is running.
func (c *Client) PauseWorkflow(ctx context.Context, id int64) error {
	err := c.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*stepDef, now time.Time) error {
		if wf.Status != WorkflowRunning {
			return fmt.Errorf("%w: workflow is %s, only a running workflow can be paused", ErrInvalidState, wf.Status)
		}
		wf.Status = WorkflowPaused
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue, Event: driver.LogWorkflowPaused, CreatedAt: now}})
	})
	if err != nil {
		return fmt.Errorf("queuety: pause workflow %d: %w", id, err)
	}
	return nil
}

// ResumeWorkflow resumes a paused workflow. It enqueues the current step
// only when that step has no pending or processing job, so resuming never
// runs a step twice. It returns ErrInvalidState unless the workflow is
// paused.
func (c *Client) ResumeWorkflow(ctx context.Context, id int64) error {
	err := c.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		if wf.Status != WorkflowPaused {
			return fmt.Errorf("%w: workflow is %s, only a paused workflow can be resumed", ErrInvalidState, wf.Status)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", ErrInvalidState, wf.CurrentStep)
		}
		wf.Status = WorkflowRunning
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		open, err := tx.JobListByWorkflow(ctx, wf.ID, []JobStatus{JobPending, JobProcessing}, driver.LockNone)
		if err != nil {
			return err
		}
		inFlight := false
		for _, j := range open {
			if j.StepIndex != nil && *j.StepIndex == wf.CurrentStep {
				inFlight = true
			}
		}
		if !inFlight {
			if err := c.engine.enqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now); err != nil {
				return err
			}
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue, Event: driver.LogWorkflowResumed, CreatedAt: now}})
	})
	if err != nil {
		return fmt.Errorf("queuety: resume workflow %d: %w", id, err)
	}
	return nil
}

// CancelWorkflow cancels a workflow that has not completed: its open jobs
// are buried ("Workflow cancelled"), it becomes cancelled, and its OnCancel
// callback is enqueued. A running step is not interrupted, but its result
// is discarded. It returns ErrInvalidState for a completed or cancelled
// workflow.
func (c *Client) CancelWorkflow(ctx context.Context, id int64) error {
	err := c.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*stepDef, now time.Time) error {
		if wf.Status == WorkflowCompleted || wf.Status == WorkflowCancelled {
			return fmt.Errorf("%w: workflow is already %s", ErrInvalidState, wf.Status)
		}
		if err := c.engine.buryOpenJobs(ctx, tx, wf.ID, 0, msgWorkflowCancelled, now); err != nil {
			return err
		}
		wf.Status = WorkflowCancelled
		wf.CompletedAt = floorSecond(now)
		wf.WaitDeadlineAt = time.Time{}
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		if err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: wf.Name, Queue: stateQueue(state), Event: driver.LogWorkflowCancelled, CreatedAt: now}}); err != nil {
			return err
		}
		if err := tx.FailureInsert(ctx, &driver.Failure{WorkflowID: wf.ID, Category: driver.FailureCancelled, RunNumber: max(wf.RunNumber, 1),
			Message: msgWorkflowCancelled, CreatedAt: now}); err != nil {
			return err
		}
		return c.engine.enqueueCallback(ctx, tx, wf, state, "_on_cancel", "cancel", now)
	})
	if err != nil {
		return fmt.Errorf("queuety: cancel workflow %d: %w", id, err)
	}
	return nil
}

// RetryWorkflow restarts a failed workflow at the step that failed, with a
// fresh job, and starts a new run (a fresh run deadline). The execution
// deadline is not extended: a workflow past it fails again at once. It
// returns ErrInvalidState unless the workflow failed.
func (c *Client) RetryWorkflow(ctx context.Context, id int64) error {
	err := c.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		if wf.Status != WorkflowFailed {
			return fmt.Errorf("%w: workflow is %s, only a failed workflow can be retried", ErrInvalidState, wf.Status)
		}
		if v, ok := state.Get("_compensated"); ok && v == true {
			return fmt.Errorf("%w: workflow was compensated and cannot be retried", ErrInvalidState)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", ErrInvalidState, wf.CurrentStep)
		}
		wf.Status = WorkflowRunning
		wf.FailedAt = time.Time{}
		wf.ErrorMessage = ""
		state.Delete("_wait")
		state.Delete("_waiting_for_signal")
		wf.State = encodeJSON(state)
		wf.RunNumber = max(wf.RunNumber, 1) + 1
		setRunDeadline(wf, state, now)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		return c.engine.enqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now)
	})
	if err != nil {
		return fmt.Errorf("queuety: retry workflow %d: %w", id, err)
	}
	return nil
}

// ContinueAsNewError is returned (as an error) by a step that restarts its
// workflow: see ContinueAsNew.
type ContinueAsNewError struct{ State State }

// Error describes the request.
func (e *ContinueAsNewError) Error() string { return "queuety: continue as new" }

// ContinueAsNew ends the current run of the workflow and starts a new one
// at step 0 with state as its whole public state. Return it from a step:
//
//	return nil, queuety.ContinueAsNew(queuety.State{"cursor": next})
//
// The execution deadline carries over unchanged; the run deadline is
// recomputed from now; the run number goes up.
func ContinueAsNew(state State) error {
	if state == nil {
		state = State{}
	}
	return &ContinueAsNewError{State: state}
}

// runtimePrivateKeys are engine keys that belong to one run and are dropped
// when a workflow continues as new.
var runtimePrivateKeys = map[string]bool{
	"_wait": true, "_waiting_for_signal": true, "_for_each_steps": true, "_repeat_steps": true,
	"_workflow_groups": true, "_compensation_stack": true, "_workflow_counters": true,
}

// continueAsNew restarts the workflow at step 0 with a fresh state, inside
// the step's transaction.
func (sc *stepCtx) continueAsNew(next State) error {
	ctx, tx := context.Background(), sc.tx
	fresh, err := stateObject("continue-as-new state", next)
	if err != nil {
		return NonRetryable(err)
	}
	in := sc.inputs()
	for _, k := range fresh.Keys() {
		if isPrivateKey(k) {
			fresh.Delete(k)
		}
	}
	for _, k := range sc.state.Keys() {
		if isPrivateKey(k) && !runtimePrivateKeys[k] {
			v, _ := sc.state.Get(k)
			if k == "_step_outputs" {
				v = []any{}
			}
			fresh.Set(k, v)
		}
	}
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	marker := phpjson.NewObject()
	marker.Set("_continue_as_new", true)
	for _, k := range sortedKeys(next) {
		marker.Set(k, next[k])
	}
	w := &writes{events: []*driver.WorkflowEvent{sc.startedEvent(in), sc.completedEvent(driver.EventStepCompleted, in, marker, fresh)}}
	sc.wf.RunNumber = max(sc.wf.RunNumber, 1) + 1
	setRunDeadline(sc.wf, fresh, sc.now)
	sc.wf.Status = WorkflowRunning
	w.logs = append(sc.logs(), debugLog(sc.wf, fresh, sc.now, map[string]any{"type": "continued_as_new", "run": int64(sc.wf.RunNumber)}))
	sc.state = fresh
	sc.e.advance(w, sc.wf, fresh, sc.steps, 0, sc.now)
	return w.flush(ctx, tx)
}

// asContinueAsNew extracts a continue-as-new request from a step error.
func asContinueAsNew(err error) (*ContinueAsNewError, bool) {
	var c *ContinueAsNewError
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}
