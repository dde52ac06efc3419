package advance

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// completePlaceholder completes a wait step's placeholder job with its
// step_started event and log rows, and returns the step's inputs.
func (sc *stepCtx) completePlaceholder() (stepInputs, error) {
	ctx, tx := sc.ctx, sc.tx
	in := sc.inputs()
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return in, err
	}
	if err := tx.EventInsert(ctx, []*driver.WorkflowEvent{sc.startedEvent(in)}); err != nil {
		return in, err
	}
	return in, tx.LogInsert(ctx, sc.logs())
}

// openWait runs a wait_for_signal placeholder: the placeholder job
// completes; the wait settles at once when matching signals already exist,
// otherwise the workflow waits (with a timer when the step has a timeout).
func (sc *stepCtx) openWait() error {
	ctx, tx := sc.ctx, sc.tx
	in, err := sc.completePlaceholder()
	if err != nil {
		return err
	}
	matched, err := sc.s.matchSignals(ctx, tx, sc.wf.ID, sc.state, sc.step)
	if err != nil {
		return err
	}
	if matched != nil {
		return sc.s.SettleWait(ctx, tx, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep, workflowstate.SignalOutput(sc.step, matched, false), sc.now)
	}
	wait := phpjson.NewObject()
	wait.Set("type", "signal")
	wait.Set("step_index", int64(sc.wf.CurrentStep))
	wait.Set("wait_mode", sc.step.WaitMode)
	wait.Set("result_key", workflowdef.NilIfEmpty(sc.step.ResultKey))
	wait.Set("waiting_for", workflowstate.StringsToAny(sc.step.SignalNames))
	wait.Set("step_name", sc.step.Name)
	if hw := strField(sc.step.Raw, "human_wait"); hw != "" {
		wait.Set("human_wait", hw)
	}
	mp, _ := sc.step.Raw.Get("match_payload")
	if mp == nil {
		mp = []any{}
	}
	wait.Set("match_payload", mp)
	if ck := strField(sc.step.Raw, "correlation_key"); ck != "" {
		wait.Set("correlation_key", ck)
	}
	if sc.step.Timeout > 0 {
		sc.wf.WaitDeadlineAt = sc.now.Add(sc.step.Timeout)
		wait.Set("timeout_at", rowtime.ISO(sc.wf.WaitDeadlineAt))
	}
	sc.state.Set("_wait", wait)
	sc.wf.Status = driver.WorkflowWaitingForSignal
	sc.wf.State = workflowstate.EncodeJSON(sc.state)
	if err := tx.WorkflowUpdate(ctx, sc.wf); err != nil {
		return err
	}
	details := phpjson.NewObject()
	details.Set("wait_type", "signal")
	details.Set("waiting_for", workflowstate.StringsToAny(sc.step.SignalNames))
	details.Set("wait_mode", sc.step.WaitMode)
	details.Set("step_name", sc.step.Name)
	hw, _ := sc.step.Raw.Get("human_wait")
	details.Set("human_wait", hw)
	details.Set("result_key", workflowdef.NilIfEmpty(sc.step.ResultKey))
	details.Set("match_payload", mp)
	details.Set("correlation_key", workflowdef.NilIfEmpty(strField(sc.step.Raw, "correlation_key"))) // trimmed, as Queuety writes it
	if sc.step.Timeout > 0 {
		details.Set("timeout_at", rowtime.ISO(sc.wf.WaitDeadlineAt))
	}
	wctx := phpjson.NewObject()
	wctx.Set("wait_type", "signal")
	after := workflowstate.PublicState(sc.state)
	return tx.EventInsert(ctx, []*driver.WorkflowEvent{{
		WorkflowID: sc.wf.ID, StepIndex: sc.wf.CurrentStep, StepName: sc.step.Name, StepType: string(sc.step.Type),
		Handler: handlerWaitForSignal, Event: driver.EventWorkflowWaiting, Input: in.state,
		Output: workflowstate.EncodeJSON(details), StateBefore: in.state, StateAfter: workflowstate.EncodeJSON(after),
		Context: workflowstate.EncodeJSON(wctx), CreatedAt: sc.now,
	}})
}

// SettleWait resolves a signal or workflow wait (what it waited for, or
// the timer, won) of a locked workflow: it merges the wait's output,
// moves to the next step and records workflow_resumed.
func (s *Service) SettleWait(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, output *phpjson.Object, now time.Time) error {
	stateBefore := workflowstate.PublicState(state)
	state.Delete("_wait")
	state.Delete("_waiting_for_signal")
	workflowstate.MergeOutput(state, output, idx)
	s.pushCompensation(state, steps[idx], idx)
	if err := s.countTransition(state); err != nil {
		wf.State = workflowstate.EncodeJSON(state)
		return s.FailWorkflowLocked(ctx, tx, wf, 0, err.Error(), now)
	}
	wf.Status = driver.WorkflowRunning
	wf.WaitDeadlineAt = time.Time{}
	w := &Writes{}
	s.advance(w, wf, state, steps, idx+1, now)
	step := steps[idx]
	before := workflowstate.EncodeJSON(stateBefore)
	w.events = append(w.events, &driver.WorkflowEvent{
		WorkflowID: wf.ID, StepIndex: idx, StepName: step.Name, StepType: string(step.Type), Handler: workflowdef.PlaceholderHandler(step.Type),
		Event: driver.EventWorkflowResumed, Input: before, Output: workflowstate.EncodeJSON(output),
		StateBefore: before, StateAfter: workflowstate.EncodePublicJSON(state), CreatedAt: now,
	})
	return w.Flush(ctx, tx)
}

// matchSignals returns the first matching payload per signal name when the
// wait is satisfied (all names for mode "all", the earliest for "any"), or
// nil. Stored signals are never consumed, as in Queuety: a signal sent
// before the wait was reached counts.
func (s *Service) matchSignals(ctx context.Context, tx driver.Tx, wfID int64, state *phpjson.Object, step *stepDef) (map[string]*phpjson.Object, error) {
	if len(step.SignalNames) == 0 {
		return nil, nil
	}
	sigs, err := tx.SignalList(ctx, wfID, step.SignalNames)
	if err != nil {
		return nil, err
	}
	matchPayload, _ := step.Raw.Get("match_payload")
	mp, _ := matchPayload.(*phpjson.Object)
	corr := strField(step.Raw, "correlation_key")
	matched := map[string]*phpjson.Object{}
	var first string
	for _, sig := range sigs {
		p, err := workflowstate.DecodeObject("signal payload", sig.Payload)
		if err != nil {
			s.log.Warn("queuety: ignoring signal with malformed payload", "workflow_id", wfID, "signal_id", sig.ID, "err", err)
			continue
		}
		if mp != nil && mp.Len() > 0 && !workflowstate.ContainsSubset(p, mp) {
			continue
		}
		if corr != "" {
			pv, ok1 := p.Get(corr)
			sv, ok2 := state.Get(corr)
			if !ok1 || !ok2 || string(workflowstate.EncodeJSON(pv)) != string(workflowstate.EncodeJSON(sv)) {
				continue
			}
		}
		if first == "" {
			first = sig.Name
		}
		if _, ok := matched[sig.Name]; !ok {
			matched[sig.Name] = p
		}
	}
	if step.WaitMode == "any" {
		if first == "" {
			return nil, nil
		}
		return map[string]*phpjson.Object{first: matched[first]}, nil
	}
	for _, n := range step.SignalNames {
		if _, ok := matched[n]; !ok {
			return nil, nil
		}
	}
	return matched, nil
}

// Signal sends a named signal with a payload (anything that encodes as a
// JSON object; nil for none) to a workflow. The signal is stored in
// Queuety's signals table whatever the workflow is doing. If the workflow
// is waiting for it, the wait settles in the same transaction and the next
// step is enqueued. A signal sent before the workflow reaches its wait
// counts when it gets there. A signal that can no longer matter (the
// workflow ended, or its wait timed out first) is stored, logged as
// ignored, and changes nothing. It returns ErrNotFound for an unknown
// workflow.
func (s *Service) Signal(ctx context.Context, workflowID int64, name string, payload any) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("queuety: signal: %w", invalidf("signal name must be 1-255 characters"))
	}
	body, err := workflowstate.ToObject("signal payload", payload)
	if err != nil {
		return fmt.Errorf("queuety: signal %q: %w", name, err)
	}
	raw := workflowstate.EncodeJSON(body)
	err = s.core.LockWorkflow(ctx, workflowID, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		return s.signalLocked(ctx, tx, wf, state, steps, name, raw, now)
	})
	if err != nil {
		return fmt.Errorf("queuety: signal %q to workflow %d: %w", name, workflowID, err)
	}
	return nil
}

// signalLocked stores a signal for a workflow the transaction holds
// locked and settles its wait when the signal completes it.
func (s *Service) signalLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, name string, raw []byte, now time.Time) error {
	if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: wf.ID, Name: name, Payload: raw, ReceivedAt: now}); err != nil {
		return err
	}
	ignore := func(reason string) error {
		return tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{"type": "signal_ignored", "signal": name, "reason": reason})})
	}
	if wf.Status.Terminal() {
		return ignore("workflow is " + string(wf.Status))
	}
	if wf.Status == driver.WorkflowWaitingForSignal && wf.CurrentStep < len(steps) {
		step := steps[wf.CurrentStep]
		if step.Type == queuetytype.StepWaitForSignal && workflowstate.Contains(step.SignalNames, name) {
			matched, err := s.matchSignals(ctx, tx, wf.ID, state, step)
			if err != nil || matched == nil {
				return err
			}
			if !wf.WaitDeadlineAt.IsZero() {
				if err := tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{
					"type": "timer_cancelled", "reason": "signal " + name + " arrived first", "timeout_at": rowtime.ISO(wf.WaitDeadlineAt)})}); err != nil {
					return err
				}
			}
			return s.SettleWait(ctx, tx, wf, state, steps, wf.CurrentStep, workflowstate.SignalOutput(step, matched, false), now)
		}
	}
	if v, ok := state.Get(workflowstate.TimedOutKey(name)); ok && v == true {
		return ignore("the wait for it timed out first")
	}
	return nil
}

// Answer sends a person's answer to the wait a workflow is in, as the
// signal that wait listens for (workflowstate.AnswerSignal), and returns the signal's
// name. The check and the signal share the workflow's row lock, and an
// answer that completes the wait settles it in the same transaction, so a
// second answer to that wait (a form submitted twice, two operators at
// once) finds the workflow no longer waiting and stores nothing. It returns
// queuetytype.ErrInvalidState when the workflow is not waiting at a signal wait, or
// its wait takes no such answer (a reject for an approval wait, an approve
// for a plain signal wait): an answer is never stored for a wait that
// cannot consume it. To deliver a signal before the workflow reaches its
// wait, send it by name with Signal.
func (s *Service) Answer(ctx context.Context, workflowID int64, answer string, payload any) (string, error) {
	if !workflowstate.KnownAnswer(answer) {
		return "", fmt.Errorf("queuety: answer workflow %d: %w", workflowID, invalidf("unknown answer %q (approve, reject or input)", answer))
	}
	body, err := workflowstate.ToObject("answer data", payload)
	if err != nil {
		return "", fmt.Errorf("queuety: %s workflow %d: %w", answer, workflowID, err)
	}
	var name string
	err = s.core.LockWorkflow(ctx, workflowID, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		if wf.Status != driver.WorkflowWaitingForSignal || wf.CurrentStep >= len(steps) || steps[wf.CurrentStep].Type != queuetytype.StepWaitForSignal {
			return fmt.Errorf("%w: workflow %d is not waiting for an answer (it is %s); an answer goes to a wait in progress "+
				"(send a signal by name to deliver one before the workflow reaches its wait)", queuetytype.ErrInvalidState, wf.ID, wf.Status)
		}
		step := steps[wf.CurrentStep]
		if name = workflowstate.AnswerSignal(step, answer); name == "" {
			return fmt.Errorf("%w: workflow %d waits for %s, which takes no %s answer%s", queuetytype.ErrInvalidState, wf.ID, workflowstate.WaitSummary(step), answer, workflowstate.AnswerHint(step, answer))
		}
		return s.signalLocked(ctx, tx, wf, state, steps, name, workflowstate.EncodeJSON(body), now)
	})
	if err != nil {
		return "", fmt.Errorf("queuety: %s workflow %d: %w", answer, workflowID, err)
	}
	return name, nil
}

// TimeOutWaitLocked settles the signal wait of wf, locked by the caller,
// if its timeout passed before the signal: a signal_timed_out row is
// logged and the workflow continues with TimedOutKey(...) = true. It
// reports whether it timed the wait out; a workflow that is no longer
// waiting, or whose wait is not yet due, is left alone.
func (s *Service) TimeOutWaitLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	if wf.Status != driver.WorkflowWaitingForSignal || wf.WaitDeadlineAt.IsZero() || now.Before(wf.WaitDeadlineAt) {
		return false, nil
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return false, err
	}
	steps, err := parseSteps(state)
	if err != nil {
		return false, err
	}
	if wf.CurrentStep >= len(steps) || steps[wf.CurrentStep].Type != queuetytype.StepWaitForSignal {
		return false, nil
	}
	step := steps[wf.CurrentStep]
	if err := tx.LogInsert(ctx, []*driver.LogEntry{debugLog(wf, state, now, map[string]any{
		"type": "signal_timed_out", "signals": workflowstate.StringsToAny(step.SignalNames), "timeout_at": rowtime.ISO(wf.WaitDeadlineAt)})}); err != nil {
		return false, err
	}
	return true, s.SettleWait(ctx, tx, wf, state, steps, wf.CurrentStep, workflowstate.SignalOutput(step, nil, true), now)
}
