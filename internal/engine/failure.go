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
	"github.com/queuety/queuety-go/store/driver"
)

// failStep records a failed step attempt: retry, or bury the job and fail
// the workflow when the attempts are used up.
func (e *Engine) failStep(ctx context.Context, r *Result) error {
	cj := r.Claimed
	var buried bool
	var out Notice
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		buried, out = false, Notice{}
		now := e.clock.Now()
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
		out = attemptOutcome(row, r, buried)
		if buried && wf != nil {
			failed := wf.Status == driver.WorkflowFailed
			if err := e.stepJobBuried(ctx, tx, wf, row, row.ErrorMessage, now); err != nil {
				return err
			}
			out.WorkflowFailed = !failed && wf.Status == driver.WorkflowFailed
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: fail step (job %d): %w", cj.Job.ID, err)
	}
	if err == nil {
		r.Notice = out
	}
	return err
}

// attemptOutcome is the outcome of a failed attempt that failAttempt
// recorded on row: buried with its stored message, or retried with the
// attempt's error.
func attemptOutcome(row *driver.Job, r *Result, buried bool) Notice {
	if buried {
		return Notice{Job: driver.JobBuried, ErrorMessage: row.ErrorMessage}
	}
	msg, _, _ := describeError(r.Err)
	return Notice{Job: driver.JobPending, ErrorMessage: msg}
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
	return e.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, f.id, driver.LockUpdate)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		row, err := tx.JobGet(ctx, f.jobID, driver.LockUpdate)
		if errors.Is(err, ErrNotFound) {
			return e.failWorkflowLocked(ctx, tx, wf, f.jobID, f.msg, e.clock.Now())
		}
		if err != nil {
			return err
		}
		return e.stepJobBuried(ctx, tx, wf, row, f.msg, e.clock.Now())
	})
}

// stepJobBuried handles a locked workflow one of whose step jobs was just
// buried: a for-each branch is recorded as a failed branch (the workflow
// fails only when the step can no longer settle); any other step fails the
// workflow.
func (e *Engine) stepJobBuried(ctx context.Context, tx driver.Tx, wf *driver.Workflow, row *driver.Job, msg string, now time.Time) error {
	if handled, err := e.forEachBranchBuried(ctx, tx, wf, row, msg, now); handled || err != nil {
		return err
	}
	return e.failWorkflowLocked(ctx, tx, wf, row.ID, msg, now)
}

// failWorkflowLocked marks a locked, non-terminal workflow failed because
// job jobID was buried, buries its other open jobs and logs
// workflow_failed, as Queuety's mark_workflow_failed_locked does.
func (e *Engine) failWorkflowLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, jobID int64, msg string, now time.Time) error {
	if wf.Status.Terminal() {
		return nil
	}
	if err := e.markFailed(ctx, tx, wf, jobID, msg, now); err != nil {
		return err
	}
	if err := tx.LogInsert(ctx, []*driver.LogEntry{{JobID: ptr(jobID), WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue,
		Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now}}); err != nil {
		return err
	}
	return e.compensateEnded(ctx, tx, wf, CompensateFailure, now)
}

// compensateEnded starts an ended workflow's compensations when reason
// calls for them, and writes the workflow row if that changed it.
func (e *Engine) compensateEnded(ctx context.Context, tx driver.Tx, wf *driver.Workflow, reason string, now time.Time) error {
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil || !shouldCompensate(state, reason) {
		return nil
	}
	if err := e.startCompensation(ctx, tx, wf, state, reason, now); err != nil {
		return err
	}
	return tx.WorkflowUpdate(ctx, wf)
}

// markFailed buries a locked workflow's open jobs (all but except) with
// msg and writes the workflow failed with it: the transition both a buried
// step and an expired deadline make. The caller logs why.
func (e *Engine) markFailed(ctx context.Context, tx driver.Tx, wf *driver.Workflow, except int64, msg string, now time.Time) error {
	if err := e.buryOpenJobs(ctx, tx, wf.ID, except, msg, now); err != nil {
		return err
	}
	wf.Status = driver.WorkflowFailed
	wf.FailedAt = rowtime.Floor(now)
	wf.ErrorMessage = msg
	wf.WaitDeadlineAt = time.Time{}
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	if _, err := tx.WorkflowEndMark(ctx, wf.ID, driver.EndedByGo, now); err != nil {
		return err
	}
	if err := tx.DependencyClear(ctx, wf.ID, wf.CurrentStep); err != nil {
		return err
	}
	return e.afterTerminal(ctx, tx, wf, nil, now)
}

// buryOpenJobs buries a workflow's pending and processing jobs, except one.
func (e *Engine) buryOpenJobs(ctx context.Context, tx driver.Tx, wfID, except int64, msg string, now time.Time) error {
	jobs, err := tx.JobListByWorkflow(ctx, wfID, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
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
	j.Status = driver.JobBuried
	j.FailedAt = rowtime.Floor(now)
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
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		expired = false
		now := e.clock.Now()
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		kind := workflowExpired(wf, now)
		if kind == "" {
			return nil
		}
		state, err := workflowstate.DecodeObject("workflow state", wf.State)
		if err != nil {
			state = phpjson.NewObject()
		}
		if e.leaveExpiry(wf, state, kind, now) {
			return e.holdExpired(ctx, tx, wf, state, now, nil)
		}
		expired = true
		return e.expireLocked(ctx, tx, wf, state, kind, now, nil)
	})
	if err != nil {
		return false, fmt.Errorf("queuety: expire workflow %d: %w", id, err)
	}
	return expired, nil
}

// attemptTrace is the step attempt whose result arrived after its
// workflow's deadline; the expiry records it so the timeline shows which
// step overran.
type attemptTrace struct {
	cj    *Claimed
	r     *Result
	steps []*stepDef
}

func (e *Engine) expireLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, kind driver.TimeoutKind, now time.Time, at *attemptTrace) error {
	if e.leaveExpiry(wf, state, kind, now) {
		return e.holdExpired(ctx, tx, wf, state, now, at)
	}
	msg := ErrDeadlineExceeded.Error()
	deadline := wf.DeadlineAt
	if kind == driver.TimeoutRun {
		msg, deadline = msgRunDeadline, wf.RunDeadlineAt
	}
	if at != nil {
		if err := e.traceOverrun(ctx, tx, wf, state, at, msg, now); err != nil {
			return err
		}
	}
	waiting := !wf.WaitDeadlineAt.IsZero()
	if err := e.markFailed(ctx, tx, wf, 0, msg, now); err != nil {
		return err
	}
	logs := []*driver.LogEntry{
		{JobID: ptr(int64(0)), WorkflowID: wf.ID, Handler: "", Queue: DefaultQueue, Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now},
		{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogWorkflowDeadlineExceeded, CreatedAt: now},
	}
	if kind == driver.TimeoutRun {
		logs[1].Context = workflowstate.EncodeJSON(map[string]any{"timeout_kind": string(kind), "run": int64(max(wf.RunNumber, 1))})
	}
	if waiting {
		logs = append(logs, debugLog(wf, state, now, map[string]any{"type": "timer_cancelled", "reason": "workflow " + string(kind)}))
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return err
	}
	f := &driver.Failure{WorkflowID: wf.ID, Category: driver.FailureTimeout, TimeoutKind: kind,
		RunNumber: max(wf.RunNumber, 1), Message: msg, ErrorClass: "queuetytype.TimeoutError", DeadlineAt: deadline, CreatedAt: now}
	if at != nil {
		f.JobID, f.StepIndex, f.Attempt = at.cj.Job.ID, ptr(*at.cj.Job.StepIndex), at.cj.Job.Attempts
	}
	if err := tx.FailureInsert(ctx, f); err != nil {
		return err
	}
	if err := e.compensateEnded(ctx, tx, wf, CompensateDeadline, now); err != nil {
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
		Event: driver.LogBuried, Attempt: ptr(j.Attempts), ErrorMessage: msg, ErrorClass: "queuetytype.TimeoutError", CreatedAt: now}
	logs := []*driver.LogEntry{buried}
	at.r.Outcome = observe.OutcomeBuried
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
	return tx.EventInsert(ctx, sc.failedEvents(sc.inputs(), msg, "queuetytype.TimeoutError", ""))
}

// enqueueCallback enqueues a workflow's deadline or cancel callback as a
// plain job on the workflow's queue: handler = the callback's name,
// payload = the public state plus a marker. Only workers that registered
// the callback claim it. It runs once: a failure buries it, and only a
// worker's death gives it another of its callbackAttempts (see
// callbackFailed), so a crash does not lose it. A cancel callback no
// worker of this process registered goes to Queuety PHP's bridge class
// when the client has a PHP workflow callback queue (phpbridge.go).
func (e *Engine) enqueueCallback(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, key, kind string, now time.Time) error {
	handler := handlerRef(state, key)
	if handler == "" {
		return nil
	}
	if kind == "cancel" && e.phpWorkflowCallback(handler) {
		return tx.JobInsert(ctx, []*driver.Job{e.phpWorkflowCallbackJob(wf, kind, handler, 0, "", now)})
	}
	return tx.JobInsert(ctx, []*driver.Job{callbackJob(wf, state, key, kind, handler, now)})
}

// callbackJob is the job of a workflow's deadline or cancel callback for
// the Go worker that has handler.
func callbackJob(wf *driver.Workflow, state *phpjson.Object, key, kind, handler string, now time.Time) *driver.Job {
	v, _ := state.Get(key)
	extra := phpjson.NewObject()
	if h, ok := v.(*phpjson.Object); ok {
		extra = workflowstate.ObjectField(h, "payload")
	}
	payload := workflowstate.PublicState(state)
	for _, k := range extra.Keys() {
		if !workflowstate.IsPrivateKey(k) {
			x, _ := extra.Get(k)
			payload.Set(k, x)
		}
	}
	marker := phpjson.NewObject()
	marker.Set("kind", kind)
	marker.Set("workflow_id", wf.ID)
	payload.Set(callbackKey, marker)
	return &driver.Job{
		Queue: workflowstate.Queue(state), Handler: handler, Payload: workflowstate.EncodeJSON(payload), Priority: workflowstate.Priority(state),
		Status: driver.JobPending, MaxAttempts: callbackAttempts, AvailableAt: rowtime.Floor(now), CostUnits: 1, CreatedAt: rowtime.Floor(now),
	}
}

func debugLog(wf *driver.Workflow, state *phpjson.Object, now time.Time, context map[string]any) *driver.LogEntry {
	return &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogDebug, Context: workflowstate.EncodeJSON(context), CreatedAt: now}
}
