package engine

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Workflow advancement lives in package internal/advance: a step's
// completion and the next step's jobs, parallel joins, for-each, repeat,
// signal and workflow waits, children, continue-as-new, budgets, failure
// and expiry with their callbacks, and compensation. This file builds its
// Service in New on the job core below (advanceCore), and keeps the
// engine's exported names for what moved there.

// The user functions the engine calls while it records a step (see
// advance.Functions).
type (
	ReducerFunc   = advance.ReducerFunc
	ConditionFunc = advance.ConditionFunc
	Functions     = advance.Functions
)

// ConstraintError is a workflow guardrail breach (see
// workflowstate.ConstraintError).
type ConstraintError = workflowstate.ConstraintError

// Compensation reasons, as Queuety records them in _compensation_cause.
const (
	CompensateFailure  = advance.CompensateFailure
	CompensateDeadline = advance.CompensateDeadline
	CompensateCancel   = advance.CompensateCancel
)

// HandlerPHPWorkflowCallback is the PHP class a Go engine hands PHP
// compensations and cancel callbacks to (see php/ in this repository).
const HandlerPHPWorkflowCallback = advance.HandlerPHPWorkflowCallback

// ForeignExpiryLookback is how far back in deadlines a Go sweeper looks for
// workflows another engine expired without running their Go deadline
// handler.
const ForeignExpiryLookback = advance.ForeignExpiryLookback

// ForeignEndLookback is how far back in failed_at and completed_at a Go
// sweeper looks for workflows another engine failed or cancelled.
const ForeignEndLookback = advance.ForeignEndLookback

// newAdvance builds workflow advancement on e's store and job core.
func (e *Engine) newAdvance() *advance.Service {
	return advance.New(e.store, advance.Config{
		Clock: e.clock, Logger: e.log, Core: advanceCore{e},
		MaxForEachItems: e.cfg.MaxForEachItems, DeadlineHandoff: e.cfg.DeadlineHandoff,
		PHPWorkflowCallbacks: e.cfg.PHPWorkflowCallbacks,
		CallbackAttempts:     callbackAttempts, CallbackRuntime: callbackRuntime,
	})
}

// advanceCore is the job core workflow advancement runs on
// (advance.Core): the engine's transitions and rules, written once here.
type advanceCore struct{ e *Engine }

func (c advanceCore) NonRetryable(err error) error { return NonRetryable(err) }

func (c advanceCore) LockWorkflow(ctx context.Context, id int64, fn advance.LockedFunc) error {
	return c.e.lockWorkflow(ctx, id, fn)
}

func (c advanceCore) BuryJob(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, now time.Time) error {
	return c.e.buryJob(ctx, tx, j, msg, now)
}

func (c advanceCore) Knows(handler string) (known, anyWorker bool) { return c.e.knows(handler) }

func (c advanceCore) Expired(wf *driver.Workflow, now time.Time) driver.TimeoutKind {
	return workflowExpired(wf, now)
}

func (c advanceCore) StartRun(wf *driver.Workflow, state *phpjson.Object, now time.Time) {
	dispatch.StartRun(wf, state, now)
}

func (c advanceCore) ScheduleDeadlines(j *driver.Job, t queuetytype.ActivityTimeouts, now time.Time) {
	dispatch.ApplyScheduleDeadlines(j, t, now)
}

func (c advanceCore) HandlerDefinition(class string) *phpjson.Object {
	return dispatch.HandlerDefinition(class)
}

// Child prepares the children of a run_workflow step (from spec's
// fields) or of a start_workflows step (from its runtime definition).
func (c advanceCore) Child(spec advance.ChildSpec) (advance.PrepareChild, error) {
	def := Definition{Name: spec.Name, Steps: spec.Steps, Queue: spec.Queue, Priority: spec.Priority, MaxAttempts: spec.MaxAttempts,
		RuntimeOrder: true, ParentWorkflowID: spec.ParentWorkflowID, ParentStepIndex: spec.ParentStepIndex}
	if spec.Runtime != nil {
		var err error
		if def, err = dispatch.DefinitionFromRuntime(spec.Runtime); err != nil {
			return nil, err
		}
		def.StartedByWorkflowID, def.StartedByStepIndex = spec.StartedByWorkflowID, spec.StartedByStepIndex
	}
	return func(initial *phpjson.Object) (advance.InsertChild, error) {
		if len(def.Steps) == 0 {
			return nil, invalidf("child workflow %q has no steps", def.Name)
		}
		p, err := dispatch.Prepare(def, initial)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx driver.Tx, now time.Time) (int64, error) {
			return c.e.dispatcher.InsertWorkflow(ctx, tx, p, now)
		}, nil
	}, nil
}

// attempt is a claimed step's attempt and its result, as workflow
// advancement records it (advance.Attempt).
type attempt struct {
	cj *Claimed
	r  *Result
}

func (a attempt) Job() *driver.Job                        { return a.cj.Job }
func (a attempt) Owns(row *driver.Job) bool               { return a.cj.owns(row) }
func (a attempt) ClaimedAt() time.Time                    { return a.cj.ClaimedAt }
func (a attempt) StartedAt() time.Time                    { return a.r.StartedAt }
func (a attempt) Duration() time.Duration                 { return a.r.Duration }
func (a attempt) StartedLog() *driver.LogEntry            { return startedLog(a.cj, a.r.StartedAt) }
func (a attempt) Artifacts() []byte                       { return a.cj.tracedArtifacts() }
func (a attempt) SetOutcome(o observe.Outcome)            { a.r.Outcome = o }
func (a attempt) TraceCompleted(ev *driver.WorkflowEvent) { a.cj.traceCompleted(ev) }
func (a attempt) TraceFailed(ev *driver.WorkflowEvent)    { a.cj.traceFailed(ev) }

func (a attempt) TraceItemCompleted(ev *driver.WorkflowEvent, itemCtx *phpjson.Object) {
	a.cj.traceItemCompleted(ev, itemCtx)
}

// Payload returns the payload the claim decoded, unless the claim found
// the job unable to run.
func (a attempt) Payload() *phpjson.Object {
	if a.cj.preErr != nil {
		return nil
	}
	return a.cj.payload
}

func (a attempt) Funcs() Functions {
	if a.r == nil {
		return nil
	}
	return a.r.Funcs
}

// locked is a step transition's rows as advance takes them.
func locked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, row *driver.Job, state *phpjson.Object, steps []*stepDef, now time.Time) advance.Locked {
	return advance.Locked{Ctx: ctx, Tx: tx, Workflow: wf, Job: row, State: state, Steps: steps, Now: now}
}

// enqueueStep writes the job(s) of step idx.
func (e *Engine) enqueueStep(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) error {
	return e.flow.EnqueueStep(ctx, tx, wf, state, steps, idx, now)
}

// afterTerminal runs what a workflow's end sets off, inside the
// transaction that ended it (see advance.Service.AfterTerminal).
func (e *Engine) afterTerminal(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) error {
	return e.flow.AfterTerminal(ctx, tx, wf, state, now)
}

// failWorkflowLocked marks a locked, non-terminal workflow failed because
// job jobID was buried (see advance.Service.FailWorkflowLocked).
func (e *Engine) failWorkflowLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, jobID int64, msg string, now time.Time) error {
	return e.flow.FailWorkflowLocked(ctx, tx, wf, jobID, msg, now)
}

// compensationEnded moves a workflow's compensations on after the
// compensation job cj ended (see advance.Service.CompensationEnded).
func (e *Engine) compensationEnded(ctx context.Context, tx driver.Tx, cj *Claimed, failedMsg string, now time.Time) error {
	return e.flow.CompensationEnded(ctx, tx, cj.payload, cj.Job.Handler, failedMsg, now)
}

// knows reports whether a worker of this process runs the handler, and
// whether the process has workers at all.
func (e *Engine) knows(handler string) (known, anyWorker bool) {
	h, anyWorker := e.findWorker(func(w *WorkerHandlers) bool { return w.Callback != nil && w.Callback(handler) })
	return h != nil, anyWorker
}

// Signal sends a named signal with a payload to a workflow, and settles
// its wait when the signal completes it (see advance.Service.Signal).
func (e *Engine) Signal(ctx context.Context, workflowID int64, name string, payload any) error {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	return e.flow.Signal(ctx, workflowID, name, payload)
}

// Answer sends a person's answer to the wait a workflow is in and returns
// the name of the signal it sent (see advance.Service.Answer).
func (e *Engine) Answer(ctx context.Context, workflowID int64, answer string, payload any) (string, error) {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	return e.flow.Answer(ctx, workflowID, answer, payload)
}

// ExpireWorkflow fails one workflow whose execution or run deadline has
// passed, and reports whether this call expired it (see
// advance.Service.ExpireWorkflow).
func (e *Engine) ExpireWorkflow(ctx context.Context, id int64) (bool, error) {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	return e.flow.ExpireWorkflow(ctx, id)
}

// FailOverrun fails one workflow past its last step, and reports whether
// it failed it (see advance.Service.FailOverrun).
func (e *Engine) FailOverrun(ctx context.Context, id int64) (bool, error) {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	return e.flow.FailOverrun(ctx, id)
}

// DeadlineHandoff is how long past a deadline the engine leaves a
// workflow whose deadline handler it cannot run to a worker that can.
func (e *Engine) DeadlineHandoff() time.Duration { return e.flow.DeadlineHandoff() }

// TakeForeignExpiryLocked handles wf, locked by the caller, a workflow
// another engine failed at its deadline without running its Go deadline
// handler (see advance.Service.TakeForeignExpiryLocked).
func (e *Engine) TakeForeignExpiryLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	return e.flow.TakeForeignExpiryLocked(ctx, tx, wf, now)
}

// ForeignExpirySkips returns the workflows the foreign expiry sweep
// moves past, dropping those whose deadline is before since.
func (e *Engine) ForeignExpirySkips(since time.Time) []int64 { return e.flow.ForeignExpirySkips(since) }

// TakeForeignEndLocked handles wf, locked by the caller, a workflow that
// another engine failed or cancelled (see
// advance.Service.TakeForeignEndLocked).
func (e *Engine) TakeForeignEndLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	return e.flow.TakeForeignEndLocked(ctx, tx, wf, now)
}

// ForeignEndSkips returns the workflows the foreign end sweep moves past
// for now, dropping those whose skip ended.
func (e *Engine) ForeignEndSkips(now time.Time) []int64 { return e.flow.ForeignEndSkips(now) }
