package advance

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Messages stored on buried jobs and failed workflows, as Queuety writes them.
const (
	// MsgAdvancedBeforeCompletion buries a step job whose workflow moved
	// on while it ran.
	MsgAdvancedBeforeCompletion = "Workflow advanced before job completion."
	msgRunDeadline              = "Run deadline exceeded"
)

// Locked is a step transition's rows, as the engine locked them in Tx:
// the workflow, the step's job, the decoded state and step definitions,
// and the time.
type Locked struct {
	// Ctx is the context of the transaction's caller: the transition's
	// writes carry its values, not its cancellation (nil: none).
	Ctx      context.Context
	Tx       driver.Tx
	Workflow *driver.Workflow
	Job      *driver.Job
	State    *phpjson.Object
	Steps    []*workflowdef.Step
	Now      time.Time
	// PublicJSON is the encoded public state of State when the caller
	// knows it (see Step.PublicJSON), else nil.
	PublicJSON []byte
}

// detached returns ctx's values without its cancellation, or an empty
// context for nil.
func detached(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return context.WithoutCancel(ctx)
}

// stepCtx returns the transition of l's step by at.
func (s *Service) stepCtx(l Locked, at Attempt) *stepCtx {
	return &stepCtx{ctx: detached(l.Ctx), s: s, tx: l.Tx, wf: l.Workflow, row: l.Job, state: l.State, steps: l.Steps, step: l.Steps[*l.Job.StepIndex], at: at, now: l.Now, public: l.PublicJSON}
}

// Complete records a step attempt that succeeded, in the transaction
// that locked l, and advances the workflow: the step is the workflow's
// current one, and the workflow can advance. can is set when the step
// asked to continue as new.
func (s *Service) Complete(l Locked, at Attempt, output *phpjson.Object, can *queuetytype.ContinueAsNewError) error {
	sc := s.stepCtx(l, at)
	step := sc.step
	if can != nil {
		if step.Type != queuetytype.StepSingle {
			return s.final(fmt.Errorf("continue-as-new is only allowed from a single step, not a %s step", step.Type))
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
		if sc.row.Handler == handlerForEach {
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
		return s.final(fmt.Errorf("step type %q is not supported by the Go engine", step.Type))
	}
}

// FailedEvents returns the step_started and step_failed events of l's
// attempt at, which failed with the given error; the state is unchanged.
func (s *Service) FailedEvents(l Locked, at Attempt, msg, class, trace string) []*driver.WorkflowEvent {
	sc := s.stepCtx(l, at)
	return sc.failedEvents(sc.inputs(), msg, class, trace)
}

// FinalizeInto computes the transition of a completed single or delay
// step (merged state, next step, events, logs, next jobs) into w without
// touching the database; the engine completes the step's job.
func (s *Service) FinalizeInto(w *Writes, l Locked, at Attempt, output *phpjson.Object) error {
	return s.stepCtx(l, at).finalizeInto(w, output)
}

// AttemptFailure rolls back a step transition because user code the
// engine called while recording the step (a reducer, a repeat condition)
// failed: the attempt fails as if its handler had returned Err.
type AttemptFailure struct{ Err error }

// Error returns the failure's message.
func (a *AttemptFailure) Error() string { return a.Err.Error() }

// Unwrap returns the error that failed the attempt.
func (a *AttemptFailure) Unwrap() error { return a.Err }

// failAttemptWith makes err fail the step's attempt (see AttemptFailure).
func failAttemptWith(err error) error { return &AttemptFailure{Err: err} }

// stepCtx carries one step transition inside its transaction.
type stepCtx struct {
	// ctx carries the caller's values (see Locked.Ctx) to the writes.
	ctx   context.Context
	s     *Service
	tx    driver.Tx
	wf    *driver.Workflow
	row   *driver.Job
	state *phpjson.Object
	steps []*stepDef
	step  *stepDef
	at    Attempt
	now   time.Time
	// public is the encoded public state of state before the
	// transition, when the caller knew it (Locked.PublicJSON), else nil.
	public []byte
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
	if sc.step.Type == queuetytype.StepForEach && sc.row.Handler != handlerForEach {
		if item, index, ok := sc.branchMeta(); ok {
			in, _ := sc.branchInputs(item, index)
			return in
		}
	}
	if sc.public != nil && sc.step.Type == queuetytype.StepSingle {
		return stepInputs{state: sc.public, input: sc.public}
	}
	in := stepInputs{state: sc.public}
	if in.state == nil {
		in.state = workflowstate.EncodePublicJSON(sc.state)
	}
	in.input = in.state
	if sc.step.Type != queuetytype.StepSingle {
		o := phpjson.NewObject()
		o.Set("state", workflowstate.PublicState(sc.state))
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
		DurationMS: ptr(sc.at.Duration().Milliseconds()), CreatedAt: sc.now,
	}
}

// startedEvent returns the step_started event of this attempt, stamped with
// its start time.
func (sc *stepCtx) startedEvent(in stepInputs) *driver.WorkflowEvent {
	ev := sc.event(driver.EventStepStarted, in)
	ev.CreatedAt = sc.at.StartedAt()
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = sc.at.ClaimedAt()
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
	return sc.completedEventAfter(ev, in, output, workflowstate.EncodePublicJSON(after))
}

// completedEventAfter is completedEvent with the public state after the
// step already encoded.
func (sc *stepCtx) completedEventAfter(ev driver.EventType, in stepInputs, output *phpjson.Object, after []byte) *driver.WorkflowEvent {
	e := sc.event(ev, in)
	e.Output, e.StateAfter, e.Artifacts = workflowstate.EncodeJSON(output), after, sc.at.Artifacts()
	sc.at.TraceCompleted(e)
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
	sc.at.TraceFailed(f)
	return []*driver.WorkflowEvent{sc.startedEvent(in), f}
}

// logs returns the 'started' and 'completed' log rows of this attempt,
// and marks its result completed.
func (sc *stepCtx) logs() []*driver.LogEntry {
	sc.at.SetOutcome(observe.OutcomeCompleted)
	return []*driver.LogEntry{sc.at.StartedLog(), {
		JobID: ptr(sc.row.ID), WorkflowID: sc.wf.ID, StepIndex: ptr(*sc.row.StepIndex), Handler: sc.row.Handler,
		Queue: sc.row.Queue, Event: driver.LogCompleted, DurationMS: ptr(sc.at.Duration().Milliseconds()), CreatedAt: sc.now,
	}}
}

// Writes collects the rows one or more step transitions write, so that a
// batch of transitions shares its statements.
type Writes struct {
	workflows []*driver.Workflow
	jobs      []*driver.Job
	events    []*driver.WorkflowEvent
	logs      []*driver.LogEntry
	// ended are the workflows these writes complete, with their states,
	// for afterTerminal.
	ended []endedWorkflow
	s     *Service
	// publicAfter is the encoded public state the last transition
	// finalizeInto computed left its workflow with.
	publicAfter []byte
	// payloads are the trees the Payloads of queued jobs encode
	// (PayloadDoc returns those that decode back unchanged).
	payloads map[*driver.Job]*phpjson.Object
}

// PayloadDoc returns the tree j's Payload decodes to, when j was queued
// into w by a step transition and its payload tree is known to decode
// back unchanged; nil otherwise (decode the Payload). The tree is the
// caller's from then on: nothing in w uses it again.
func (w *Writes) PayloadDoc(j *driver.Job) *phpjson.Object {
	if doc := w.payloads[j]; doc != nil && phpjson.RoundTrips(doc) {
		return doc
	}
	return nil
}

// PublicStateAfter returns the encoded public state of the workflow the
// last FinalizeInto into w advanced, as its step_completed event stores
// it (state_after): the next step's state_before.
func (w *Writes) PublicStateAfter() []byte { return w.publicAfter }

// Jobs returns the jobs collected so far.
func (w *Writes) Jobs() []*driver.Job { return w.jobs }

type endedWorkflow struct {
	wf    *driver.Workflow
	state *phpjson.Object
}

// Workflows returns the workflow rows collected so far, as the
// transitions left them.
func (w *Writes) Workflows() []*driver.Workflow { return w.workflows }

// Flush writes everything collected, inside tx: workflows, then jobs,
// events and log rows.
func (w *Writes) Flush(ctx context.Context, tx driver.Tx) error {
	if err := tx.WorkflowUpdateMany(ctx, w.workflows); err != nil {
		return err
	}
	return w.FlushRows(ctx, tx)
}

// FlushRows writes everything collected but the workflow rows, which the
// caller wrote: jobs, events and log rows, and what the workflows that
// ended set off.
func (w *Writes) FlushRows(ctx context.Context, tx driver.Tx) error {
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
		return w.s.afterTerminalAll(ctx, tx, w.ended, w.ended[0].wf.CompletedAt)
	}
	return nil
}

// finalize merges a completed step's output and moves the workflow to the
// next step (or completes it): one transition, written with the job's
// completion, its logs and events, and the next step's job.
func (sc *stepCtx) finalize(output *phpjson.Object) error {
	ctx, tx := sc.ctx, sc.tx
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	w := &Writes{}
	if err := sc.finalizeInto(w, output); err != nil {
		return err
	}
	return w.Flush(ctx, tx)
}

// finalizeInto computes a step's transition (merged state, next step,
// events, logs, next jobs) into w without touching the database; the
// step's job is completed by the caller.
func (sc *stepCtx) finalizeInto(w *Writes, output *phpjson.Object) error {
	next := sc.wf.CurrentStep + 1
	if target, ok := workflowstate.NextStepTarget(output); ok && sc.step.Type != queuetytype.StepParallel {
		i := workflowstate.StepIndex(sc.steps, target)
		if i < 0 {
			return sc.s.final(fmt.Errorf("Workflow %d: _next_step target '%s' not found.", sc.wf.ID, target))
		}
		next = i
	}
	in := sc.inputs()
	workflowstate.MergeOutput(sc.state, output, sc.wf.CurrentStep)
	sc.s.pushCompensation(sc.state, sc.step, sc.wf.CurrentStep)
	workflowstate.AddCostUnits(sc.state, sc.row.CostUnits)
	if err := sc.s.countTransition(sc.state); err != nil {
		return err
	}
	after := workflowstate.EncodePublicJSON(sc.state)
	w.publicAfter = after
	w.events = append(w.events, sc.startedEvent(in), sc.completedEventAfter(driver.EventStepCompleted, in, output, after))
	w.logs = append(w.logs, sc.logs()...)
	sc.s.advance(w, sc.wf, sc.state, sc.steps, next, sc.now)
	return nil
}

// advance sets current_step to next and either completes the workflow or
// queues the next step's jobs (unless the workflow is paused), into w.
func (s *Service) advance(w *Writes, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, next int, now time.Time) {
	wf.CurrentStep = next
	wf.State = workflowstate.EncodeJSON(state)
	w.workflows = append(w.workflows, wf)
	if next >= wf.TotalSteps || next >= len(steps) {
		wf.Status = driver.WorkflowCompleted
		wf.CompletedAt = rowtime.Floor(now)
		wf.WaitDeadlineAt = time.Time{}
		w.logs = append(w.logs, &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogWorkflowCompleted, CreatedAt: now})
		w.s = s
		w.ended = append(w.ended, endedWorkflow{wf: wf, state: state})
		return
	}
	if wf.Status != driver.WorkflowPaused {
		jobs, doc := s.stepJobsDoc(wf, state, steps, next, now)
		w.jobs = append(w.jobs, jobs...)
		if len(jobs) == 1 {
			w.keepPayload(jobs[0], doc)
		}
	}
}

// keepPayload remembers doc as the tree j's Payload encodes, for
// PayloadDoc to return when it decodes back to exactly that; whether it
// does is checked when asked.
func (w *Writes) keepPayload(j *driver.Job, doc *phpjson.Object) {
	if doc == nil {
		return
	}
	if w.payloads == nil {
		w.payloads = map[*driver.Job]*phpjson.Object{}
	}
	w.payloads[j] = doc
}

// completeBranch merges one finished parallel branch; the last branch to
// finish advances the workflow (parallel steps ignore _next_step).
func (sc *stepCtx) completeBranch(output *phpjson.Object) error {
	ctx, tx := sc.ctx, sc.tx
	in := sc.inputs()
	workflowstate.MergeOutput(sc.state, output, sc.wf.CurrentStep)
	workflowstate.AddCostUnits(sc.state, sc.row.CostUnits)
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
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
	w := &Writes{events: []*driver.WorkflowEvent{sc.startedEvent(in), branch}, logs: sc.logs()}
	if completed < len(sc.step.Branches) {
		sc.wf.State = workflowstate.EncodeJSON(sc.state)
		w.workflows = append(w.workflows, sc.wf)
		return w.Flush(ctx, tx)
	}
	// Queuety writes the last branch's step_completed input as the plain
	// public state (step_started and step_branch_completed wrap it).
	last := *branch
	last.Event, last.Input = driver.EventStepCompleted, in.state
	w.events = append(w.events, &last)
	sc.s.pushCompensation(sc.state, sc.step, sc.wf.CurrentStep)
	if err := sc.s.countTransition(sc.state); err != nil {
		return err
	}
	sc.s.advance(w, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep+1, sc.now)
	return w.Flush(ctx, tx)
}
