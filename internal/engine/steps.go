package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Messages stored on buried jobs and failed workflows, as Queuety writes them.
const (
	msgAdvancedBeforeCompletion = "Workflow advanced before job completion."
	msgRunDeadline              = "Run deadline exceeded"
)

// attachWorkflow decodes the workflow a claimed step belongs to. A workflow
// the engine cannot read makes the step fail at once with a clear error.
func (e *Engine) attachWorkflow(cj *Claimed, wf *driver.Workflow) {
	if wf == nil {
		cj.preErr = NonRetryable(orphanError(cj.Job.WorkflowID))
		return
	}
	cj.flow.Workflow = wf
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d: %w", wf.ID, err))
		return
	}
	cj.flow.State = state
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
	cj.flow.Steps = steps
	cj.flow.Def = steps[idx]
}

// shareWorkflow attaches the workflow another claim of the same batch
// already decoded. The state and steps are read-only once attached.
func (e *Engine) shareWorkflow(cj, from *Claimed) {
	cj.flow.Workflow, cj.flow.State, cj.flow.Steps = from.flow.Workflow, from.flow.State, from.flow.Steps
	idx := *cj.Job.StepIndex
	if idx < 0 || idx >= len(cj.flow.Steps) {
		cj.preErr = NonRetryable(fmt.Errorf("workflow %d has no step %d", cj.flow.Workflow.ID, idx))
		return
	}
	cj.flow.Def = cj.flow.Steps[idx]
}

// lockStep locks a step's workflow and job (in that order, as Queuety
// does), checks that the attempt still owns the job, and decodes the state.
func (e *Engine) lockStep(ctx context.Context, tx driver.Tx, cj *Claimed) (*driver.Workflow, *driver.Job, *phpjson.Object, []*stepDef, error) {
	wf, err := tx.WorkflowGet(ctx, cj.Job.WorkflowID, driver.LockUpdate)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, nil, nil, nil, err
	}
	row, err := tx.JobGet(ctx, cj.Job.ID, driver.LockUpdate)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !cj.owns(row) {
		return nil, nil, nil, nil, ErrStaleAttempt
	}
	if wf == nil {
		return nil, row, nil, nil, NonRetryable(orphanError(cj.Job.WorkflowID))
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
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
	output, err := stepOutput(r)
	if err == nil {
		err = workflowstate.CheckNextStep(output, cj.flow.Steps)
	}
	if err != nil {
		r.Err = NonRetryable(err)
		return e.failStep(ctx, r)
	}
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.clock.Now()
		wf, row, state, steps, err := e.lockStep(ctx, tx, cj)
		if wf == nil && row != nil {
			// The workflow was deleted while the step ran.
			r.Outcome = observe.OutcomeBuried
			return e.buryJob(ctx, tx, row, orphanError(cj.Job.WorkflowID).Error(), now)
		}
		if err != nil {
			return err
		}
		idx := *row.StepIndex
		if kind := workflowExpired(wf, now); kind != "" {
			// The result arrives after the deadline: the workflow fails
			// and never advances past this step.
			return e.expireLocked(ctx, tx, wf, state, kind, now, &attemptTrace{cj: cj, r: r, steps: steps})
		}
		if wf.Status != driver.WorkflowRunning && wf.Status != driver.WorkflowPaused &&
			!(wf.Status == driver.WorkflowWaitingForSignal && cj.Job.Handler == HandlerWaitForSignal) &&
			!(wf.Status == driver.WorkflowWaitingForWorkflows && cj.Job.Handler == HandlerWaitForWorkflows) {
			r.Outcome = observe.OutcomeBuried
			return e.buryJob(ctx, tx, row, msgAdvancedBeforeCompletion, now)
		}
		if idx != wf.CurrentStep || idx >= len(steps) {
			r.Outcome = observe.OutcomeBuried
			return e.buryJob(ctx, tx, row, msgAdvancedBeforeCompletion, now)
		}
		step := steps[idx]
		sc := &stepCtx{e: e, tx: tx, wf: wf, row: row, state: state, steps: steps, step: step, cj: cj, r: r, now: now}
		if can != nil {
			if step.Type != queuetytype.StepSingle {
				return NonRetryable(fmt.Errorf("continue-as-new is only allowed from a single step, not a %s step", step.Type))
			}
			return sc.continueAsNew(can.State)
		}
		switch step.Type {
		case queuetytype.StepSingle:
			return sc.finalize(output)
		case queuetytype.StepDelay:
			return sc.finalize(phpjson.NewObject())
		case queuetytype.StepParallel:
			return sc.completeBranch(output)
		case queuetytype.StepWaitForSignal:
			return sc.openWait()
		case queuetytype.StepForEach:
			if row.Handler == HandlerForEach {
				return sc.expandForEach()
			}
			return sc.completeForEachBranch(output)
		case queuetytype.StepRepeat:
			out, err := sc.repeatOutput()
			if err != nil {
				return err
			}
			return sc.finalize(out)
		case queuetytype.StepRunWorkflow:
			return sc.startRunWorkflow()
		case queuetytype.StepStartWorkflows:
			return sc.startWorkflows()
		case queuetytype.StepWaitForWorkflows:
			return sc.evaluateWorkflowWait()
		default:
			return NonRetryable(fmt.Errorf("step type %q is not supported by the Go engine", step.Type))
		}
	})
	var af *attemptFailure
	if errors.As(err, &af) {
		r.Err = af.err // the attempt failed: retry it while attempts remain
		return e.failStep(ctx, r)
	}
	if err != nil && !errors.Is(err, ErrStaleAttempt) && IsNonRetryable(err) {
		r.Err = err
		return e.failStep(ctx, r)
	}
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: complete step (job %d): %w", cj.Job.ID, err)
	}
	return err
}

// attemptFailure rolls back a step transition because user code the
// engine called while recording the step (a reducer, a repeat condition)
// failed: the attempt fails as if its handler had returned err.
type attemptFailure struct{ err error }

// Error returns the failure's message.
func (a *attemptFailure) Error() string { return a.err.Error() }

// Unwrap returns the error that failed the attempt.
func (a *attemptFailure) Unwrap() error { return a.err }

// failAttemptWith makes err fail the step's attempt (see attemptFailure).
func failAttemptWith(err error) error { return &attemptFailure{err: err} }

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

// stepInputs is the public state before a step attempt, encoded once for
// every event of the attempt: the state itself, and the step's input (the
// state for single steps; the state and the step definition otherwise).
// A for-each branch's has no state (nil: the events' state columns stay
// NULL) and its item and index as input.
type stepInputs struct {
	state []byte
	input []byte
	// context is the events' context: a for-each branch's item and index,
	// else none ([]).
	context []byte
}

// inputs snapshots the public state before this attempt changes it.
func (sc *stepCtx) inputs() stepInputs {
	if sc.step.Type == queuetytype.StepForEach && sc.row.Handler != HandlerForEach {
		if item, index, ok := workflowstate.BranchMeta(sc.row); ok {
			in, _ := sc.branchInputs(item, index)
			return in
		}
	}
	before := workflowstate.PublicState(sc.state)
	in := stepInputs{state: workflowstate.EncodeJSON(before)}
	in.input = in.state
	if sc.step.Type != queuetytype.StepSingle {
		o := phpjson.NewObject()
		o.Set("state", before)
		o.Set("definition", sc.step.Raw)
		in.input = workflowstate.EncodeJSON(o)
	}
	return in
}

// event returns an event of this attempt with its input and state before.
func (sc *stepCtx) event(ev driver.EventType, in stepInputs) *driver.WorkflowEvent {
	return &driver.WorkflowEvent{
		WorkflowID: sc.wf.ID, JobID: sc.row.ID, StepIndex: *sc.row.StepIndex, StepName: sc.step.Name,
		StepType: string(sc.step.Type), Handler: sc.row.Handler, Event: ev, Queue: sc.row.Queue,
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
	ev.Context, ev.DurationMS = in.contextOrEmpty(), nil
	return ev
}

func (in stepInputs) contextOrEmpty() []byte {
	if in.context != nil {
		return in.context
	}
	return []byte("[]")
}

// completedEvent returns a step_completed or step_branch_completed event
// with the step's output and the public state after it.
func (sc *stepCtx) completedEvent(ev driver.EventType, in stepInputs, output, after *phpjson.Object) *driver.WorkflowEvent {
	e := sc.event(ev, in)
	e.Output, e.StateAfter, e.Artifacts = workflowstate.EncodeJSON(output), workflowstate.EncodeJSON(workflowstate.PublicState(after)), sc.cj.tracedArtifacts()
	sc.cj.traceCompleted(e)
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
	f.StateAfter, f.Context, f.Error = in.state, in.contextOrEmpty(), workflowstate.EncodeJSON(errDoc)
	sc.cj.traceFailed(f)
	return []*driver.WorkflowEvent{sc.startedEvent(in), f}
}

// logs returns the 'started' and 'completed' log rows of this attempt,
// and marks its result completed.
func (sc *stepCtx) logs() []*driver.LogEntry {
	sc.r.Outcome = observe.OutcomeCompleted
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
	// ended are the workflows these writes complete, with their states,
	// for afterTerminal.
	ended []endedWorkflow
	e     *Engine
}

type endedWorkflow struct {
	wf    *driver.Workflow
	state *phpjson.Object
}

// flush writes everything collected, inside tx: workflows, then jobs,
// events and log rows.
func (w *writes) flush(ctx context.Context, tx driver.Tx) error {
	if err := tx.WorkflowUpdateMany(ctx, w.workflows); err != nil {
		return err
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
		if err := tx.LogInsert(ctx, w.logs); err != nil {
			return err
		}
	}
	if len(w.ended) > 0 {
		return w.e.afterTerminalAll(ctx, tx, w.ended, w.ended[0].wf.CompletedAt)
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
	if target, ok := workflowstate.NextStepTarget(output); ok && sc.step.Type != queuetytype.StepParallel {
		i := workflowstate.StepIndex(sc.steps, target)
		if i < 0 {
			return NonRetryable(fmt.Errorf("Workflow %d: _next_step target '%s' not found.", sc.wf.ID, target))
		}
		next = i
	}
	in := sc.inputs()
	workflowstate.MergeOutput(sc.state, output, sc.wf.CurrentStep)
	pushCompensation(sc.state, sc.step, sc.wf.CurrentStep)
	workflowstate.AddCostUnits(sc.state, sc.row.CostUnits)
	if err := countTransition(sc.state); err != nil {
		return err
	}
	w.events = append(w.events, sc.startedEvent(in), sc.completedEvent(driver.EventStepCompleted, in, output, sc.state))
	w.logs = append(w.logs, sc.logs()...)
	sc.e.advance(w, sc.wf, sc.state, sc.steps, next, sc.now)
	return nil
}

// advance sets current_step to next and either completes the workflow or
// queues the next step's jobs (unless the workflow is paused), into w.
func (e *Engine) advance(w *writes, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, next int, now time.Time) {
	wf.CurrentStep = next
	wf.State = workflowstate.EncodeJSON(state)
	w.workflows = append(w.workflows, wf)
	if next >= wf.TotalSteps || next >= len(steps) {
		wf.Status = driver.WorkflowCompleted
		wf.CompletedAt = rowtime.Floor(now)
		wf.WaitDeadlineAt = time.Time{}
		w.logs = append(w.logs, &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogWorkflowCompleted, CreatedAt: now})
		w.e = e
		w.ended = append(w.ended, endedWorkflow{wf: wf, state: state})
		return
	}
	if wf.Status != driver.WorkflowPaused {
		w.jobs = append(w.jobs, e.stepJobs(wf, state, steps, next, now)...)
	}
}

// completeBranch merges one finished parallel branch; the last branch to
// finish advances the workflow (parallel steps ignore _next_step).
func (sc *stepCtx) completeBranch(output *phpjson.Object) error {
	ctx, tx := context.Background(), sc.tx
	in := sc.inputs()
	workflowstate.MergeOutput(sc.state, output, sc.wf.CurrentStep)
	workflowstate.AddCostUnits(sc.state, sc.row.CostUnits)
	if err := tx.JobComplete(ctx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	done, err := tx.JobListByWorkflow(ctx, sc.wf.ID, []driver.JobStatus{driver.JobCompleted}, driver.LockNone)
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
		sc.wf.State = workflowstate.EncodeJSON(sc.state)
		w.workflows = append(w.workflows, sc.wf)
		return w.flush(ctx, tx)
	}
	// Queuety writes the last branch's step_completed input as the plain
	// public state (step_started and step_branch_completed wrap it).
	last := *branch
	last.Event, last.Input = driver.EventStepCompleted, in.state
	w.events = append(w.events, &last)
	pushCompensation(sc.state, sc.step, sc.wf.CurrentStep)
	if err := countTransition(sc.state); err != nil {
		return err
	}
	sc.e.advance(w, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep+1, sc.now)
	return w.flush(ctx, tx)
}

// orphanError is the failure of a step job whose workflow row does not
// exist (deleted, or never written): it can never run, so it is buried
// with this error instead of waiting forever.
func orphanError(workflowID int64) error {
	return fmt.Errorf("workflow %d not found: the step has no workflow to run in", workflowID)
}
