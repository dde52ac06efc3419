package queuety

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Messages stored on buried jobs and failed workflows, as Queuety writes them.
const (
	msgAdvancedBeforeCompletion = "Workflow advanced before job completion."
	msgWorkflowCancelled        = "Workflow cancelled"
	msgRunDeadline              = "Run deadline exceeded"
)

// attachWorkflow decodes the workflow a claimed step belongs to. A workflow
// the engine cannot read makes the step fail at once with a clear error.
func (e *Engine) attachWorkflow(cj *Claimed, wf *driver.Workflow) {
	if wf == nil {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d not found", cj.Job.WorkflowID))
		return
	}
	cj.wf = wf
	state, err := decodeObject("workflow state", wf.State)
	if err != nil {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d: %w", wf.ID, err))
		return
	}
	cj.state = state
	steps, err := parseSteps(state)
	if err != nil {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d: malformed step definitions: %w", wf.ID, err))
		return
	}
	idx := *cj.Job.StepIndex
	if idx < 0 || idx >= len(steps) {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d has no step %d", wf.ID, idx))
		return
	}
	cj.steps = steps
	cj.step = steps[idx]
}

// lockStep locks a step's workflow and job (in that order, as Queuety
// does), checks that the attempt still owns the job, and decodes the state.
func (e *Engine) lockStep(ctx context.Context, tx driver.Tx, cj *Claimed) (*driver.Workflow, *driver.Job, *phpjson.Object, []*stepDef, error) {
	wf, err := tx.WorkflowGet(ctx, cj.Job.WorkflowID, driver.LockUpdate)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	row, err := tx.JobGet(ctx, cj.Job.ID, driver.LockUpdate)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !cj.owns(row) {
		return nil, nil, nil, nil, ErrStaleAttempt
	}
	state, err := decodeObject("workflow state", wf.State)
	if err != nil {
		return wf, row, nil, nil, NonRetryable(err)
	}
	steps, err := parseSteps(state)
	if err != nil {
		return wf, row, state, nil, NonRetryable(err)
	}
	return wf, row, state, steps, nil
}

// completeStep records a step attempt that succeeded and advances the
// workflow, all in one transaction.
func (e *Engine) completeStep(ctx context.Context, r *Result) error {
	cj := r.Claimed
	can, _ := asContinueAsNew(r.Err)
	output, err := stateObject("step output", r.Output)
	if err == nil {
		err = checkNextStep(output, cj.steps)
	}
	if err != nil {
		r.Err = NonRetryable(err)
		return e.failStep(ctx, r)
	}
	err = e.c.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.c.clock.Now()
		wf, row, state, steps, err := e.lockStep(ctx, tx, cj)
		if err != nil {
			return err
		}
		idx := *row.StepIndex
		if kind := workflowExpired(wf, now); kind != "" {
			// The result arrives after the deadline: the workflow fails
			// and never advances past this step.
			return e.expireLocked(ctx, tx, wf, state, kind, now, &attemptTrace{cj: cj, r: r, steps: steps})
		}
		if wf.Status != WorkflowRunning && wf.Status != WorkflowPaused && !(wf.Status == WorkflowWaitingForSignal && cj.Job.Handler == HandlerWaitForSignal) {
			return e.buryJob(ctx, tx, row, msgAdvancedBeforeCompletion, now)
		}
		if idx != wf.CurrentStep || idx >= len(steps) {
			return e.buryJob(ctx, tx, row, msgAdvancedBeforeCompletion, now)
		}
		step := steps[idx]
		sc := &stepCtx{e: e, tx: tx, wf: wf, row: row, state: state, steps: steps, step: step, cj: cj, r: r, now: now}
		if can != nil {
			if step.Type != "single" {
				return NonRetryable(fmt.Errorf("continue-as-new is only allowed from a single step, not a %s step", step.Type))
			}
			return sc.continueAsNew(can.State)
		}
		switch step.Type {
		case "single":
			return sc.finalize(output)
		case "delay":
			return sc.finalize(phpjson.NewObject())
		case "parallel":
			return sc.completeBranch(output)
		case "wait_for_signal":
			return sc.openWait()
		default:
			return NonRetryable(fmt.Errorf("step type %q is not supported by the Go engine", step.Type))
		}
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) && IsNonRetryable(err) {
		r.Err = err
		return e.failStep(ctx, r)
	}
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: complete step (job %d): %w", cj.Job.ID, err)
	}
	return err
}

// stepCtx carries one step transition inside its transaction.
type stepCtx struct {
	e     *Engine
	tx    driver.Tx
	wf    *driver.Workflow
	row   *driver.Job
	state *phpjson.Object
	steps []*stepDef
	step  *stepDef
	cj    *Claimed
	r     *Result
	now   time.Time
}

func (sc *stepCtx) queue() string { return stateQueue(sc.state) }

// stepInputs is the public state before a step attempt, encoded once for
// every event of the attempt: the state itself, and the step's input (the
// state for single steps; the state and the step definition otherwise).
type stepInputs struct {
	state []byte
	input []byte
}

// inputs snapshots the public state before this attempt changes it.
func (sc *stepCtx) inputs() stepInputs {
	before := publicState(sc.state)
	in := stepInputs{state: encodeJSON(before)}
	in.input = in.state
	if sc.step.Type != "single" {
		o := phpjson.NewObject()
		o.Set("state", before)
		o.Set("definition", sc.step.raw)
		in.input = encodeJSON(o)
	}
	return in
}

// event returns an event of this attempt with its input and state before.
func (sc *stepCtx) event(ev driver.EventType, in stepInputs) *driver.WorkflowEvent {
	return &driver.WorkflowEvent{
		WorkflowID: sc.wf.ID, JobID: sc.row.ID, StepIndex: *sc.row.StepIndex, StepName: sc.step.Name,
		StepType: sc.step.Type, Handler: sc.row.Handler, Event: ev, Queue: sc.row.Queue,
		Attempt: ptr(sc.row.Attempts), Input: in.input, StateBefore: in.state,
		DurationMS: ptr(sc.r.Duration.Milliseconds()), CreatedAt: sc.now,
	}
}

// startedEvent returns the step_started event of this attempt, stamped with
// its start time.
func (sc *stepCtx) startedEvent(in stepInputs) *driver.WorkflowEvent {
	ev := sc.event(driver.EventStepStarted, in)
	ev.CreatedAt = sc.r.StartedAt
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = sc.cj.ClaimedAt
	}
	ev.Context, ev.DurationMS = []byte("[]"), nil
	return ev
}

// completedEvent returns a step_completed or step_branch_completed event
// with the step's output and the public state after it.
func (sc *stepCtx) completedEvent(ev driver.EventType, in stepInputs, output, after *phpjson.Object) *driver.WorkflowEvent {
	e := sc.event(ev, in)
	e.Output, e.StateAfter = encodeJSON(output), encodeJSON(publicState(after))
	return e
}

// failedEvents returns the step_started and step_failed events of an
// attempt that failed with the given error; the state is unchanged.
func (sc *stepCtx) failedEvents(in stepInputs, msg, class, trace string) []*driver.WorkflowEvent {
	errDoc := phpjson.NewObject()
	errDoc.Set("message", msg)
	errDoc.Set("class", class)
	errDoc.Set("trace", trace)
	f := sc.event(driver.EventStepFailed, in)
	f.StateAfter, f.Context, f.Error = in.state, []byte("[]"), encodeJSON(errDoc)
	return []*driver.WorkflowEvent{sc.startedEvent(in), f}
}

// logs returns the 'started' and 'completed' log rows of this attempt.
func (sc *stepCtx) logs() []*driver.LogEntry {
	return []*driver.LogEntry{startedLog(sc.cj, sc.r.StartedAt), {
		JobID: ptr(sc.row.ID), WorkflowID: sc.wf.ID, StepIndex: ptr(*sc.row.StepIndex), Handler: sc.row.Handler,
		Queue: sc.row.Queue, Event: driver.LogCompleted, DurationMS: ptr(sc.r.Duration.Milliseconds()), CreatedAt: sc.now,
	}}
}

// writes collects the rows one or more step transitions write, so that a
// batch of transitions shares its statements.
type writes struct {
	workflows []*driver.Workflow
	jobs      []*driver.Job
	events    []*driver.WorkflowEvent
	logs      []*driver.LogEntry
}

// flush writes everything collected, inside tx: workflows, then jobs,
// events and log rows.
func (w *writes) flush(ctx context.Context, tx driver.Tx) error {
	for _, wf := range w.workflows {
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
	}
	if len(w.jobs) > 0 {
		if err := tx.JobInsert(ctx, w.jobs); err != nil {
			return err
		}
	}
	if len(w.events) > 0 {
		if err := tx.EventInsert(ctx, w.events); err != nil {
			return err
		}
	}
	if len(w.logs) > 0 {
		return tx.LogInsert(ctx, w.logs)
	}
	return nil
}

// finalize merges a completed step's output and moves the workflow to the
// next step (or completes it): one transition, written with the job's
// completion, its logs and events, and the next step's job.
func (sc *stepCtx) finalize(output *phpjson.Object) error {
	ctx, tx := context.Background(), sc.tx
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	w := &writes{}
	if err := sc.finalizeInto(w, output); err != nil {
		return err
	}
	return w.flush(ctx, tx)
}

// finalizeInto computes a step's transition (merged state, next step,
// events, logs, next jobs) into w without touching the database; the
// step's job is completed by the caller.
func (sc *stepCtx) finalizeInto(w *writes, output *phpjson.Object) error {
	next := sc.wf.CurrentStep + 1
	if target, ok := nextStepTarget(output); ok && sc.step.Type != "parallel" {
		i := stepIndexByName(sc.steps, target)
		if i < 0 {
			return NonRetryable(fmt.Errorf("Workflow %d: _next_step target '%s' not found.", sc.wf.ID, target))
		}
		next = i
	}
	in := sc.inputs()
	mergeOutput(sc.state, output, sc.wf.CurrentStep)
	w.events = append(w.events, sc.startedEvent(in), sc.completedEvent(driver.EventStepCompleted, in, output, sc.state))
	w.logs = append(w.logs, sc.logs()...)
	sc.e.advance(w, sc.wf, sc.state, sc.steps, next, sc.now)
	return nil
}

// advance sets current_step to next and either completes the workflow or
// queues the next step's jobs (unless the workflow is paused), into w.
func (e *Engine) advance(w *writes, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, next int, now time.Time) {
	wf.CurrentStep = next
	wf.State = encodeJSON(state)
	w.workflows = append(w.workflows, wf)
	if next >= wf.TotalSteps || next >= len(steps) {
		wf.Status = WorkflowCompleted
		wf.CompletedAt = floorSecond(now)
		wf.WaitDeadlineAt = time.Time{}
		w.logs = append(w.logs, &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: stateQueue(state), Event: driver.LogWorkflowCompleted, CreatedAt: now})
		return
	}
	if wf.Status != WorkflowPaused {
		w.jobs = append(w.jobs, e.stepJobs(wf, state, steps, next, now)...)
	}
}

// completeBranch merges one finished parallel branch; the last branch to
// finish advances the workflow (parallel steps ignore _next_step).
func (sc *stepCtx) completeBranch(output *phpjson.Object) error {
	ctx, tx := context.Background(), sc.tx
	in := sc.inputs()
	mergeOutput(sc.state, output, sc.wf.CurrentStep)
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	done, err := tx.JobListByWorkflow(ctx, sc.wf.ID, []JobStatus{JobCompleted}, driver.LockNone)
	if err != nil {
		return err
	}
	completed := 0
	for _, j := range done {
		if j.StepIndex != nil && *j.StepIndex == sc.wf.CurrentStep {
			completed++
		}
	}
	branch := sc.completedEvent(driver.EventStepBranchCompleted, in, output, sc.state)
	w := &writes{events: []*driver.WorkflowEvent{sc.startedEvent(in), branch}, logs: sc.logs()}
	if completed < len(sc.step.Branches) {
		sc.wf.State = encodeJSON(sc.state)
		w.workflows = append(w.workflows, sc.wf)
		return w.flush(ctx, tx)
	}
	// Queuety writes the last branch's step_completed input as the plain
	// public state (step_started and step_branch_completed wrap it).
	last := *branch
	last.Event, last.Input = driver.EventStepCompleted, in.state
	w.events = append(w.events, &last)
	sc.e.advance(w, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep+1, sc.now)
	return w.flush(ctx, tx)
}

// openWait runs a wait_for_signal placeholder: the placeholder job
// completes; the wait settles at once when matching signals already exist,
// otherwise the workflow waits (with a timer when the step has a timeout).
func (sc *stepCtx) openWait() error {
	ctx, tx := context.Background(), sc.tx
	in := sc.inputs()
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	if err := tx.EventInsert(ctx, []*driver.WorkflowEvent{sc.startedEvent(in)}); err != nil {
		return err
	}
	if err := tx.LogInsert(ctx, sc.logs()); err != nil {
		return err
	}
	matched, err := sc.e.matchSignals(ctx, tx, sc.wf.ID, sc.state, sc.step)
	if err != nil {
		return err
	}
	if matched != nil {
		return sc.e.settleWait(ctx, tx, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep, signalOutput(sc.step, matched, false), sc.now)
	}
	wait := phpjson.NewObject()
	wait.Set("type", "signal")
	wait.Set("step_index", int64(sc.wf.CurrentStep))
	wait.Set("wait_mode", sc.step.WaitMode)
	wait.Set("result_key", nilIfEmpty(sc.step.ResultKey))
	wait.Set("waiting_for", stringsToAny(sc.step.SignalNames))
	wait.Set("step_name", sc.step.Name)
	mp, _ := sc.step.raw.Get("match_payload")
	if mp == nil {
		mp = []any{}
	}
	wait.Set("match_payload", mp)
	if ck := strField(sc.step.raw, "correlation_key"); ck != "" {
		wait.Set("correlation_key", ck)
	}
	if sc.step.Timeout > 0 {
		sc.wf.WaitDeadlineAt = sc.now.Add(sc.step.Timeout)
		wait.Set("timeout_at", isoTime(sc.wf.WaitDeadlineAt))
	}
	sc.state.Set("_wait", wait)
	sc.wf.Status = WorkflowWaitingForSignal
	sc.wf.State = encodeJSON(sc.state)
	if err := tx.WorkflowUpdate(ctx, sc.wf); err != nil {
		return err
	}
	details := phpjson.NewObject()
	details.Set("wait_type", "signal")
	details.Set("waiting_for", stringsToAny(sc.step.SignalNames))
	details.Set("wait_mode", sc.step.WaitMode)
	details.Set("step_name", sc.step.Name)
	hw, _ := sc.step.raw.Get("human_wait")
	details.Set("human_wait", hw)
	details.Set("result_key", nilIfEmpty(sc.step.ResultKey))
	details.Set("match_payload", mp)
	ck, _ := sc.step.raw.Get("correlation_key")
	details.Set("correlation_key", ck)
	if sc.step.Timeout > 0 {
		details.Set("timeout_at", isoTime(sc.wf.WaitDeadlineAt))
	}
	wctx := phpjson.NewObject()
	wctx.Set("wait_type", "signal")
	after := publicState(sc.state)
	return tx.EventInsert(ctx, []*driver.WorkflowEvent{{
		WorkflowID: sc.wf.ID, StepIndex: sc.wf.CurrentStep, StepName: sc.step.Name, StepType: sc.step.Type,
		Handler: HandlerWaitForSignal, Event: driver.EventWorkflowWaiting, Input: in.state,
		Output: encodeJSON(details), StateBefore: in.state, StateAfter: encodeJSON(after),
		Context: encodeJSON(wctx), CreatedAt: sc.now,
	}})
}

// settleWait resolves a signal wait (the signal or the timer won): it
// merges the wait's output, moves to the next step and records
// workflow_resumed.
func (e *Engine) settleWait(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, output *phpjson.Object, now time.Time) error {
	stateBefore := publicState(state)
	state.Delete("_wait")
	state.Delete("_waiting_for_signal")
	mergeOutput(state, output, idx)
	wf.Status = WorkflowRunning
	wf.WaitDeadlineAt = time.Time{}
	w := &writes{}
	e.advance(w, wf, state, steps, idx+1, now)
	step := steps[idx]
	before := encodeJSON(stateBefore)
	w.events = append(w.events, &driver.WorkflowEvent{
		WorkflowID: wf.ID, StepIndex: idx, StepName: step.Name, StepType: step.Type, Handler: placeholderHandler(step.Type),
		Event: driver.EventWorkflowResumed, Input: before, Output: encodeJSON(output),
		StateBefore: before, StateAfter: encodeJSON(publicState(state)), CreatedAt: now,
	})
	return w.flush(ctx, tx)
}

// matchSignals returns the first matching payload per signal name when the
// wait is satisfied (all names for mode "all", the earliest for "any"), or
// nil. Stored signals are never consumed, as in Queuety: a signal sent
// before the wait was reached counts.
func (e *Engine) matchSignals(ctx context.Context, tx driver.Tx, wfID int64, state *phpjson.Object, step *stepDef) (map[string]*phpjson.Object, error) {
	if len(step.SignalNames) == 0 {
		return nil, nil
	}
	sigs, err := tx.SignalList(ctx, wfID, step.SignalNames)
	if err != nil {
		return nil, err
	}
	matchPayload, _ := step.raw.Get("match_payload")
	mp, _ := matchPayload.(*phpjson.Object)
	corr := strField(step.raw, "correlation_key")
	matched := map[string]*phpjson.Object{}
	var first string
	for _, s := range sigs {
		p, err := decodeObject("signal payload", s.Payload)
		if err != nil {
			e.c.log.Warn("queuety: ignoring signal with malformed payload", "workflow_id", wfID, "signal_id", s.ID, "err", err)
			continue
		}
		if mp != nil && mp.Len() > 0 && !containsSubset(p, mp) {
			continue
		}
		if corr != "" {
			pv, ok1 := p.Get(corr)
			sv, ok2 := state.Get(corr)
			if !ok1 || !ok2 || string(encodeJSON(pv)) != string(encodeJSON(sv)) {
				continue
			}
		}
		if first == "" {
			first = s.Name
		}
		if _, ok := matched[s.Name]; !ok {
			matched[s.Name] = p
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

// signalOutput is what a settled wait merges into the state (Queuety's
// rules), plus the timed-out marker for waits that have a timeout.
func signalOutput(step *stepDef, matched map[string]*phpjson.Object, timedOut bool) *phpjson.Object {
	out := phpjson.NewObject()
	if dm, ok := step.raw.Get("decision_map"); ok && dm != nil {
		if m, ok := dm.(*phpjson.Object); ok && m.Len() > 0 && !timedOut {
			var sel string
			for _, n := range step.SignalNames {
				if _, ok := matched[n]; ok {
					sel = n
					break
				}
			}
			var outcome any = sel
			if v, ok := m.Get(sel); ok {
				outcome = v
			}
			data := matched[sel]
			if data == nil {
				data = phpjson.NewObject()
			}
			if step.ResultKey != "" {
				d := phpjson.NewObject()
				d.Set("outcome", outcome)
				d.Set("signal", sel)
				d.Set("data", data)
				out.Set(step.ResultKey, d)
			} else {
				out.Set("decision_outcome", outcome)
				out.Set("decision_signal", sel)
				for _, k := range data.Keys() {
					if !isPrivateKey(k) {
						v, _ := data.Get(k)
						out.Set(k, v)
					}
				}
			}
			return out
		}
	}
	switch {
	case timedOut:
	case step.ResultKey != "" && len(step.SignalNames) == 1:
		p := matched[step.SignalNames[0]]
		if p == nil {
			p = phpjson.NewObject()
		}
		out.Set(step.ResultKey, p)
	case step.ResultKey != "":
		col := phpjson.NewObject()
		for _, n := range step.SignalNames {
			if p, ok := matched[n]; ok {
				col.Set(n, p)
			}
		}
		out.Set(step.ResultKey, col)
	default:
		for _, n := range step.SignalNames {
			p := matched[n]
			if p == nil {
				continue
			}
			for _, k := range p.Keys() {
				if !isPrivateKey(k) {
					v, _ := p.Get(k)
					out.Set(k, v)
				}
			}
		}
	}
	if step.Timeout > 0 {
		name := step.ResultKey
		if name == "" && len(step.SignalNames) > 0 {
			name = step.SignalNames[0]
		}
		out.Set(TimedOutKey(name), timedOut)
	}
	return out
}

// containsSubset reports whether p contains every key of subset with an
// equal value (recursively for objects).
func containsSubset(p, subset *phpjson.Object) bool {
	for _, k := range subset.Keys() {
		want, _ := subset.Get(k)
		got, ok := p.Get(k)
		if !ok {
			return false
		}
		wo, wIsObj := want.(*phpjson.Object)
		go_, gIsObj := got.(*phpjson.Object)
		if wIsObj && gIsObj {
			if !containsSubset(go_, wo) {
				return false
			}
			continue
		}
		if string(encodeJSON(want)) != string(encodeJSON(got)) {
			return false
		}
	}
	return true
}

// failStep records a failed step attempt: retry, or bury the job and fail
// the workflow when the attempts are used up.
func (e *Engine) failStep(ctx context.Context, r *Result) error {
	cj := r.Claimed
	var buried bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		buried = false
		now := e.c.clock.Now()
		wf, row, state, steps, err := e.lockStep(ctx, tx, cj)
		if err != nil && !IsNonRetryable(err) {
			return err
		}
		if wf != nil && state != nil {
			if kind := workflowExpired(wf, now); kind != "" {
				return e.expireLocked(ctx, tx, wf, state, kind, now, &attemptTrace{cj: cj, r: r, steps: steps})
			}
		}
		if state != nil && steps != nil && *row.StepIndex < len(steps) {
			sc := &stepCtx{e: e, tx: tx, wf: wf, row: row, state: state, steps: steps, step: steps[*row.StepIndex], cj: cj, r: r, now: now}
			msg, class, trace := describeError(r.Err)
			if err := tx.EventInsert(ctx, sc.failedEvents(sc.inputs(), msg, class, trace)); err != nil {
				return err
			}
		}
		var timeout *TimeoutError
		errors.As(r.Err, &timeout)
		buried, err = e.failAttempt(ctx, tx, cj, row, r, timeout)
		if err != nil {
			return err
		}
		if buried && wf != nil {
			return e.failWorkflowLocked(ctx, tx, wf, row.ID, row.ErrorMessage, now)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: fail step (job %d): %w", cj.Job.ID, err)
	}
	return err
}

// wfFailure is a workflow to fail after a job outside a step transaction
// was buried (stale recovery, activity timeouts).
type wfFailure struct {
	id    int64
	jobID int64
	msg   string
}

// failWorkflow fails a workflow in its own transaction.
func (e *Engine) failWorkflow(ctx context.Context, f wfFailure) error {
	return e.c.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, f.id, driver.LockUpdate)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return e.failWorkflowLocked(ctx, tx, wf, f.jobID, f.msg, e.c.clock.Now())
	})
}

// failWorkflowLocked marks a locked, non-terminal workflow failed because
// job jobID was buried, buries its other open jobs and logs
// workflow_failed, as Queuety's mark_workflow_failed_locked does.
func (e *Engine) failWorkflowLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, jobID int64, msg string, now time.Time) error {
	if wf.Status.Terminal() {
		return nil
	}
	wf.Status = WorkflowFailed
	wf.FailedAt = floorSecond(now)
	wf.ErrorMessage = msg
	wf.WaitDeadlineAt = time.Time{}
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	if err := e.buryOpenJobs(ctx, tx, wf.ID, jobID, msg, now); err != nil {
		return err
	}
	return tx.LogInsert(ctx, []*driver.LogEntry{{JobID: ptr(jobID), WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue,
		Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now}})
}

// buryOpenJobs buries a workflow's pending and processing jobs, except one.
func (e *Engine) buryOpenJobs(ctx context.Context, tx driver.Tx, wfID, except int64, msg string, now time.Time) error {
	jobs, err := tx.JobListByWorkflow(ctx, wfID, []JobStatus{JobPending, JobProcessing}, driver.LockUpdate)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.ID == except {
			continue
		}
		if err := e.buryJob(ctx, tx, j, msg, now); err != nil {
			return err
		}
	}
	return nil
}

// buryJob buries one job row with a message.
func (e *Engine) buryJob(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, now time.Time) error {
	j.Status = JobBuried
	j.FailedAt = floorSecond(now)
	j.ErrorMessage = msg
	clearAttemptDeadlines(j)
	j.ScheduleToStartAt = time.Time{}
	j.ScheduleToCloseAt = time.Time{}
	return tx.JobUpdate(ctx, j)
}

// ExpireWorkflow fails one workflow whose execution or run deadline has
// passed: in one transaction it buries the open step jobs (cancelling
// timers and waits), marks the workflow failed with "Deadline exceeded"
// (or "Run deadline exceeded"), records a timeout failure, logs
// workflow_failed and workflow_deadline_exceeded as Queuety does, and
// enqueues the OnDeadline callback. It reports whether this call expired
// the workflow: under the row lock only one caller can.
func (e *Engine) ExpireWorkflow(ctx context.Context, id int64) (bool, error) {
	var expired bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		expired = false
		now := e.c.clock.Now()
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		kind := workflowExpired(wf, now)
		if kind == "" {
			return nil
		}
		state, err := decodeObject("workflow state", wf.State)
		if err != nil {
			state = phpjson.NewObject()
		}
		expired = true
		return e.expireLocked(ctx, tx, wf, state, kind, now, nil)
	})
	if err != nil {
		return false, fmt.Errorf("queuety: expire workflow %d: %w", id, err)
	}
	return expired, nil
}

// ExpireWorkflows expires up to limit workflows past a deadline. Candidates
// are read through the deadline indexes with SKIP LOCKED and expired under
// their lock, so concurrent sweepers split the work and each workflow is
// expired (and its callback enqueued) once. It returns how many it expired
// and whether a full batch was found (more may be waiting).
func (e *Engine) ExpireWorkflows(ctx context.Context, limit int) (int, bool, error) {
	var n int
	var more bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		n = 0
		now := e.c.clock.Now()
		wfs, err := tx.WorkflowFindExpired(ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		more = len(wfs) >= limit
		for _, wf := range wfs {
			kind := workflowExpired(wf, now)
			if kind == "" {
				continue
			}
			state, err := decodeObject("workflow state", wf.State)
			if err != nil {
				state = phpjson.NewObject()
			}
			if err := e.expireLocked(ctx, tx, wf, state, kind, now, nil); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: expire workflows: %w", err)
	}
	return n, more, nil
}

// attemptTrace is the step attempt whose result arrived after its
// workflow's deadline; the expiry records it so the timeline shows which
// step overran.
type attemptTrace struct {
	cj    *Claimed
	r     *Result
	steps []*stepDef
}

func (e *Engine) expireLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, kind TimeoutKind, now time.Time, at *attemptTrace) error {
	msg := ErrDeadlineExceeded.Error()
	deadline := wf.DeadlineAt
	if kind == TimeoutRun {
		msg, deadline = msgRunDeadline, wf.RunDeadlineAt
	}
	if at != nil {
		if err := e.traceOverrun(ctx, tx, wf, state, at, msg, now); err != nil {
			return err
		}
	}
	waiting := !wf.WaitDeadlineAt.IsZero()
	if err := e.buryOpenJobs(ctx, tx, wf.ID, 0, msg, now); err != nil {
		return err
	}
	wf.Status = WorkflowFailed
	wf.FailedAt = floorSecond(now)
	wf.ErrorMessage = msg
	wf.WaitDeadlineAt = time.Time{}
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	logs := []*driver.LogEntry{
		{JobID: ptr(int64(0)), WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue, Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now},
		{WorkflowID: wf.ID, Handler: wf.Name, Queue: stateQueue(state), Event: driver.LogWorkflowDeadlineExceeded, CreatedAt: now},
	}
	if kind == TimeoutRun {
		logs[1].Context = encodeJSON(map[string]any{"timeout_kind": string(kind), "run": int64(max(wf.RunNumber, 1))})
	}
	if waiting {
		logs = append(logs, debugLog(wf, state, now, map[string]any{"type": "timer_cancelled", "reason": "workflow " + string(kind)}))
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return err
	}
	f := &driver.Failure{WorkflowID: wf.ID, Category: driver.FailureTimeout, TimeoutKind: kind,
		RunNumber: max(wf.RunNumber, 1), Message: msg, ErrorClass: "queuety.TimeoutError", DeadlineAt: deadline, CreatedAt: now}
	if at != nil {
		f.JobID, f.StepIndex, f.Attempt = at.cj.Job.ID, ptr(*at.cj.Job.StepIndex), at.cj.Job.Attempts
	}
	if err := tx.FailureInsert(ctx, f); err != nil {
		return err
	}
	return e.enqueueCallback(ctx, tx, wf, state, "_on_deadline", "deadline", now)
}

// traceOverrun writes the log rows and events of a step attempt whose
// result came after the workflow's deadline: it started, and it was
// buried with the deadline's message.
func (e *Engine) traceOverrun(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, at *attemptTrace, msg string, now time.Time) error {
	j := at.cj.Job
	idx := *j.StepIndex
	buried := &driver.LogEntry{JobID: ptr(j.ID), WorkflowID: wf.ID, StepIndex: ptr(idx), Handler: j.Handler, Queue: j.Queue,
		Event: driver.LogBuried, Attempt: ptr(j.Attempts), ErrorMessage: msg, ErrorClass: "queuety.TimeoutError", CreatedAt: now}
	logs := []*driver.LogEntry{buried}
	if !at.r.StartedAt.IsZero() {
		buried.DurationMS = ptr(at.r.Duration.Milliseconds())
		logs = []*driver.LogEntry{startedLog(at.cj, at.r.StartedAt), buried}
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return err
	}
	if idx >= len(at.steps) {
		return nil
	}
	sc := &stepCtx{e: e, tx: tx, wf: wf, row: j, state: state, steps: at.steps, step: at.steps[idx], cj: at.cj, r: at.r, now: now}
	return tx.EventInsert(ctx, sc.failedEvents(sc.inputs(), msg, "queuety.TimeoutError", ""))
}

// enqueueCallback enqueues a workflow's deadline or cancel callback as a
// plain job on the workflow's queue: handler = the callback's name,
// payload = the public state plus a marker. Only workers that registered
// the callback claim it; it has one attempt, so it runs at most once.
func (e *Engine) enqueueCallback(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, key, kind string, now time.Time) error {
	handler := callbackName(state, key)
	if handler == "" {
		return nil
	}
	v, _ := state.Get(key)
	extra := phpjson.NewObject()
	if h, ok := v.(*phpjson.Object); ok {
		extra = objField(h, "payload")
	}
	payload := publicState(state)
	for _, k := range extra.Keys() {
		if !isPrivateKey(k) {
			x, _ := extra.Get(k)
			payload.Set(k, x)
		}
	}
	marker := phpjson.NewObject()
	marker.Set("kind", kind)
	marker.Set("workflow_id", wf.ID)
	payload.Set(callbackKey, marker)
	return tx.JobInsert(ctx, []*driver.Job{{
		Queue: stateQueue(state), Handler: handler, Payload: encodeJSON(payload), Priority: statePriority(state),
		Status: JobPending, MaxAttempts: 1, AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now),
	}})
}

// callbackName returns the handler of a stored callback: a name, or the
// class of a {class, payload} object (definition-dispatched workflows).
func callbackName(state *phpjson.Object, key string) string {
	switch v, _ := state.Get(key); h := v.(type) {
	case string:
		return h
	case *phpjson.Object:
		return strField(h, "class")
	}
	return ""
}

func debugLog(wf *driver.Workflow, state *phpjson.Object, now time.Time, context map[string]any) *driver.LogEntry {
	return &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: stateQueue(state), Event: driver.LogDebug, Context: encodeJSON(context), CreatedAt: now}
}

// enqueueStep writes the job(s) of step idx.
func (e *Engine) enqueueStep(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) error {
	return tx.JobInsert(ctx, e.stepJobs(wf, state, steps, idx, now))
}

// stepJobs builds the job(s) of step idx, as Queuety's enqueue_step_def
// does: the step's handler (one job per parallel branch) or its internal
// placeholder, with the options resolved from the step definition and the
// workflow's defaults, and __queuety_runtime in the payload.
func (e *Engine) stepJobs(wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) []*driver.Job {
	step := steps[idx]
	var jobs []*driver.Job
	switch step.Type {
	case "parallel":
		for _, b := range step.Branches {
			def := mergeBranch(step.raw, b)
			jobs = append(jobs, e.stepJob(wf, state, def, strField(def, "class"), objField(def, "payload"), idx, 1, now, -1))
		}
	case "single":
		jobs = append(jobs, e.stepJob(wf, state, step.raw, step.Class, objField(step.raw, "payload"), idx, 1, now, -1))
	default:
		p := phpjson.NewObject()
		p.Set(stepIndexKey, int64(idx))
		delay := int64(-1)
		if step.Type == "delay" {
			delay = max(step.Delay, 0)
		}
		jobs = append(jobs, e.stepJob(wf, state, step.raw, placeholderHandler(step.Type), p, idx, 0, now, delay))
	}
	return jobs
}

// stepJob resolves one step job row (Queuety's StepDispatchOptions): step
// options first, then the workflow's _queue, _priority and _max_attempts.
func (e *Engine) stepJob(wf *driver.Workflow, state, def *phpjson.Object, handler string, payload *phpjson.Object, idx, defaultCost int, now time.Time, delaySeconds int64) *driver.Job {
	queue := strField(def, "queue")
	if queue == "" {
		queue = stateQueue(state)
	}
	prio := statePriority(state)
	if p, ok := priorityField(def); ok {
		prio = p
	}
	maxAttempts := int(intValue(def, "max_attempts"))
	if maxAttempts <= 0 {
		maxAttempts = stateMaxAttempts(state)
	}
	maxAttempts = min(max(maxAttempts, 1), MaxAttemptsLimit)
	rtDef := parseRuntimeFromDefinition(def)
	rtDef.MaxAttempts = maxAttempts
	doc := payload.Clone()
	doc.Set(runtimeKey, rtDef.encode())
	cost := defaultCost
	if v, ok := def.Get("cost_units"); ok {
		if n, ok := v.(int64); ok && n >= 0 {
			cost = int(n)
		}
	}
	var delay time.Duration
	if delaySeconds >= 0 {
		delay = time.Duration(delaySeconds) * time.Second
	} else {
		for _, k := range []string{"job_delay_seconds", "job_delay", "delay"} {
			if n := intValue(def, k); n > 0 {
				delay = time.Duration(n) * time.Second
				break
			}
		}
	}
	j := &driver.Job{
		Queue: queue, Handler: handler, Payload: encodeJSON(doc), Priority: prio, Status: JobPending,
		MaxAttempts: maxAttempts, AvailableAt: dueAt(now, delay), WorkflowID: wf.ID, StepIndex: ptr(idx),
		CostUnits: cost, CreatedAt: floorSecond(now),
	}
	applyScheduleDeadlines(j, rtDef.Timeouts, now)
	return j
}

// parseRuntimeFromDefinition reads the runtime options a step definition
// carries (backoff, timeout_seconds and the Go timeout keys).
func parseRuntimeFromDefinition(def *phpjson.Object) runtimeOptions {
	wrapper := phpjson.NewObject()
	wrapper.Set(runtimeKey, def)
	rt := parseRuntime(wrapper)
	if v, ok := def.Get("retry"); ok { // grouped form: retry{max_attempts, backoff}
		if ro, ok := v.(*phpjson.Object); ok && rt.Backoff == nil {
			w := phpjson.NewObject()
			w.Set(runtimeKey, ro)
			rt.Backoff = parseRuntime(w).Backoff
		}
	}
	return rt
}

func mergeBranch(parent, branch *phpjson.Object) *phpjson.Object {
	out := phpjson.NewObject()
	for _, k := range parent.Keys() {
		if k == "branches" || k == "handlers" || k == "type" {
			continue
		}
		v, _ := parent.Get(k)
		out.Set(k, v)
	}
	for _, k := range branch.Keys() {
		v, _ := branch.Get(k)
		out.Set(k, v)
	}
	return out
}

func objField(o *phpjson.Object, k string) *phpjson.Object {
	if v, ok := o.Get(k); ok {
		if p, ok := v.(*phpjson.Object); ok {
			return p
		}
	}
	return phpjson.NewObject()
}

func priorityField(o *phpjson.Object) (Priority, bool) {
	v, ok := o.Get("priority")
	if !ok {
		return 0, false
	}
	switch p := v.(type) {
	case int64:
		if Priority(p).Valid() {
			return Priority(p), true
		}
	case string:
		if pr, err := ParsePriority(p); err == nil {
			return pr, true
		}
	}
	return 0, false
}

func stateQueue(state *phpjson.Object) string {
	if q := strField(state, "_queue"); q != "" {
		return q
	}
	return DefaultQueue
}

func statePriority(state *phpjson.Object) Priority {
	if p := Priority(intValue(state, "_priority")); p.Valid() {
		return p
	}
	return PriorityLow
}

func stateMaxAttempts(state *phpjson.Object) int {
	if n := int(intValue(state, "_max_attempts")); n > 0 {
		return n
	}
	return DefaultMaxAttempts
}

func nextStepTarget(output *phpjson.Object) (string, bool) {
	v, ok := output.Get("_next_step")
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok && s != ""
}

// checkNextStep rejects a _next_step that names no step.
func checkNextStep(output *phpjson.Object, steps []*stepDef) error {
	if t, ok := nextStepTarget(output); ok && steps != nil && stepIndexByName(steps, t) < 0 {
		return fmt.Errorf("_next_step target '%s' not found", t)
	}
	return nil
}

func stepIndexByName(steps []*stepDef, name string) int {
	for i, s := range steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// mergeOutput applies Queuety's merge rule: top-level keys overwrite (a
// shallow merge); "_" keys are dropped except _workflow_groups and
// _repeat_steps, which replace their state key; state pruning bookkeeping
// runs when the workflow uses prune_state_after.
func mergeOutput(state, output *phpjson.Object, currentStep int) {
	var outputKeys []any
	for _, k := range output.Keys() {
		v, _ := output.Get(k)
		switch {
		case k == "_workflow_groups" || k == "_repeat_steps":
			if _, isObj := v.(*phpjson.Object); isObj || isList(v) {
				state.Set(k, v)
			}
		case isPrivateKey(k):
		default:
			state.Set(k, v)
			outputKeys = append(outputKeys, k)
		}
	}
	pruneAfter, ok := state.Get("_prune_state_after")
	if !ok {
		return
	}
	n, _ := pruneAfter.(int64)
	outputs := phpjson.NewObject()
	switch so, _ := state.Get("_step_outputs"); v := so.(type) {
	case *phpjson.Object:
		outputs = v
	case []any:
		for i, e := range v {
			outputs.Set(strconv.Itoa(i), e)
		}
	}
	if outputKeys == nil {
		outputKeys = []any{}
	}
	outputs.Set(strconv.Itoa(currentStep), outputKeys)
	if int64(currentStep) >= n {
		cutoff := int64(currentStep) - n
		for _, k := range outputs.Keys() {
			idx, err := strconv.ParseInt(k, 10, 64)
			if err != nil || idx > cutoff {
				continue
			}
			keys, _ := outputs.Get(k)
			if list, ok := keys.([]any); ok {
				for _, key := range list {
					if s, ok := key.(string); ok && !isPrivateKey(s) {
						state.Delete(s)
					}
				}
			}
			outputs.Delete(k)
		}
	}
	state.Set("_step_outputs", outputs)
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
