package advance

import (
	"context"
	"errors"
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

// FailWorkflow fails workflow id, in its own transaction, after its job
// jobID was buried with msg outside a step transaction (stale recovery,
// activity timeouts).
func (s *Service) FailWorkflow(ctx context.Context, id, jobID int64, msg string) error {
	return s.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if errors.Is(err, queuetytype.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		row, err := tx.JobGet(ctx, jobID, driver.LockUpdate)
		if errors.Is(err, queuetytype.ErrNotFound) {
			return s.FailWorkflowLocked(ctx, tx, wf, jobID, msg, s.clock.Now())
		}
		if err != nil {
			return err
		}
		return s.StepJobBuried(ctx, tx, wf, row, msg, s.clock.Now())
	})
}

// StepJobBuried handles a locked workflow one of whose step jobs was just
// buried: a for-each branch is recorded as a failed branch (the workflow
// fails only when the step can no longer settle); any other step fails the
// workflow.
func (s *Service) StepJobBuried(ctx context.Context, tx driver.Tx, wf *driver.Workflow, row *driver.Job, msg string, now time.Time) error {
	if handled, err := s.forEachBranchBuried(ctx, tx, wf, row, msg, now); handled || err != nil {
		return err
	}
	return s.FailWorkflowLocked(ctx, tx, wf, row.ID, msg, now)
}

// FailWorkflowLocked marks a locked, non-terminal workflow failed because
// job jobID was buried, buries its other open jobs and logs
// workflow_failed, as Queuety's mark_workflow_failed_locked does.
func (s *Service) FailWorkflowLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, jobID int64, msg string, now time.Time) error {
	if wf.Status.Terminal() {
		return nil
	}
	if err := s.markFailed(ctx, tx, wf, jobID, msg, now); err != nil {
		return err
	}
	if err := tx.LogInsert(ctx, []*driver.LogEntry{{JobID: ptr(jobID), WorkflowID: wf.ID, Handler: "", Queue: queuetytype.DefaultQueue,
		Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now}}); err != nil {
		return err
	}
	return s.compensateEnded(ctx, tx, wf, CompensateFailure, now)
}

// compensateEnded starts an ended workflow's compensations when reason
// calls for them, and writes the workflow row if that changed it.
func (s *Service) compensateEnded(ctx context.Context, tx driver.Tx, wf *driver.Workflow, reason string, now time.Time) error {
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil || !ShouldCompensate(state, reason) {
		return nil
	}
	if err := s.StartCompensation(ctx, tx, wf, state, reason, now); err != nil {
		return err
	}
	return tx.WorkflowUpdate(ctx, wf)
}

// markFailed buries a locked workflow's open jobs (all but except) with
// msg and writes the workflow failed with it: the transition both a buried
// step and an expired deadline make. The caller logs why.
func (s *Service) markFailed(ctx context.Context, tx driver.Tx, wf *driver.Workflow, except int64, msg string, now time.Time) error {
	if err := s.BuryOpenJobs(ctx, tx, wf.ID, except, msg, now); err != nil {
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
	return s.AfterTerminal(ctx, tx, wf, nil, now)
}

// BuryOpenJobs buries a workflow's pending and processing jobs, except one.
func (s *Service) BuryOpenJobs(ctx context.Context, tx driver.Tx, wfID, except int64, msg string, now time.Time) error {
	jobs, err := tx.JobListByWorkflow(ctx, wfID, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.ID == except {
			continue
		}
		if err := s.core.BuryJob(ctx, tx, j, msg, now); err != nil {
			return err
		}
	}
	return nil
}

// ExpireWorkflow fails one workflow whose execution or run deadline has
// passed: in one transaction it buries the open step jobs (cancelling
// timers and waits), marks the workflow failed with "Deadline exceeded"
// (or "Run deadline exceeded"), records a timeout failure, logs
// workflow_failed and workflow_deadline_exceeded as Queuety does, and
// enqueues the OnDeadline callback. It reports whether this call expired
// the workflow: under the row lock only one caller can.
func (s *Service) ExpireWorkflow(ctx context.Context, id int64) (bool, error) {
	var expired bool
	err := s.store.InTx(ctx, func(tx driver.Tx) error {
		expired = false
		now := s.clock.Now()
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		kind := s.core.Expired(wf, now)
		if kind == "" {
			return nil
		}
		state, err := workflowstate.DecodeObject("workflow state", wf.State)
		if err != nil {
			state = phpjson.NewObject()
		}
		if s.LeaveExpiry(wf, state, kind, now) {
			return s.HoldExpired(ctx, tx, wf, state, now, nil)
		}
		expired = true
		return s.ExpireLocked(ctx, tx, wf, state, kind, now, nil)
	})
	if err != nil {
		return false, fmt.Errorf("queuety: expire workflow %d: %w", id, err)
	}
	return expired, nil
}

// Overrun is the step attempt whose result arrived after its workflow's
// deadline, with the workflow's step definitions; the expiry records it
// so the timeline shows which step overran.
type Overrun struct {
	Attempt Attempt
	Steps   []*workflowdef.Step
}

// ExpireLocked fails a locked workflow whose deadline (kind) passed, as
// ExpireWorkflow does, or holds it for a worker that has its deadline
// handler (see LeaveExpiry). at is the step attempt whose result came
// late, or nil.
func (s *Service) ExpireLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, kind driver.TimeoutKind, now time.Time, at *Overrun) error {
	if s.LeaveExpiry(wf, state, kind, now) {
		return s.HoldExpired(ctx, tx, wf, state, now, at)
	}
	msg := queuetytype.ErrDeadlineExceeded.Error()
	deadline := wf.DeadlineAt
	if kind == driver.TimeoutRun {
		msg, deadline = msgRunDeadline, wf.RunDeadlineAt
	}
	if at != nil {
		if err := s.traceOverrun(ctx, tx, wf, state, at, msg, now); err != nil {
			return err
		}
	}
	waiting := !wf.WaitDeadlineAt.IsZero()
	if err := s.markFailed(ctx, tx, wf, 0, msg, now); err != nil {
		return err
	}
	logs := []*driver.LogEntry{
		{JobID: ptr(int64(0)), WorkflowID: wf.ID, Handler: "", Queue: queuetytype.DefaultQueue, Event: driver.LogWorkflowFailed, ErrorMessage: msg, CreatedAt: now},
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
		j := at.Attempt.Job()
		f.JobID, f.StepIndex, f.Attempt = j.ID, ptr(*j.StepIndex), j.Attempts
	}
	if err := tx.FailureInsert(ctx, f); err != nil {
		return err
	}
	if err := s.compensateEnded(ctx, tx, wf, CompensateDeadline, now); err != nil {
		return err
	}
	return s.EnqueueCallback(ctx, tx, wf, state, "_on_deadline", "deadline", now)
}

// traceOverrun writes the log rows and events of a step attempt whose
// result came after the workflow's deadline: it started, and it was
// buried with the deadline's message.
func (s *Service) traceOverrun(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, at *Overrun, msg string, now time.Time) error {
	j := at.Attempt.Job()
	idx := *j.StepIndex
	buried := &driver.LogEntry{JobID: ptr(j.ID), WorkflowID: wf.ID, StepIndex: ptr(idx), Handler: j.Handler, Queue: j.Queue,
		Event: driver.LogBuried, Attempt: ptr(j.Attempts), ErrorMessage: msg, ErrorClass: "queuetytype.TimeoutError", CreatedAt: now}
	logs := []*driver.LogEntry{buried}
	at.Attempt.SetOutcome(observe.OutcomeBuried)
	if !at.Attempt.StartedAt().IsZero() {
		buried.DurationMS = ptr(at.Attempt.Duration().Milliseconds())
		logs = []*driver.LogEntry{at.Attempt.StartedLog(), buried}
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return err
	}
	if idx >= len(at.Steps) {
		return nil
	}
	sc := &stepCtx{ctx: detached(ctx), s: s, tx: tx, wf: wf, row: j, state: state, steps: at.Steps, step: at.Steps[idx], at: at.Attempt, now: now}
	return tx.EventInsert(ctx, sc.failedEvents(sc.inputs(), msg, "queuetytype.TimeoutError", ""))
}

// EnqueueCallback enqueues a workflow's deadline or cancel callback as a
// plain job on the workflow's queue: handler = the callback's name,
// payload = the public state plus a marker. Only workers that registered
// the callback claim it. It runs once: a failure buries it, and only a
// worker's death gives it another of its Config.CallbackAttempts (the
// engine's rule for callback jobs), so a crash does not lose it. A cancel callback no
// worker of this process registered goes to Queuety PHP's bridge class
// when the client has a PHP workflow callback queue (phpbridge.go).
func (s *Service) EnqueueCallback(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, key, kind string, now time.Time) error {
	handler := handlerRef(state, key)
	if handler == "" {
		return nil
	}
	if kind == "cancel" && s.phpWorkflowCallback(handler) {
		return tx.JobInsert(ctx, []*driver.Job{s.phpWorkflowCallbackJob(wf, kind, handler, 0, "", now)})
	}
	return tx.JobInsert(ctx, []*driver.Job{s.callbackJob(wf, state, key, kind, handler, now)})
}

// callbackJob is the job of a workflow's deadline or cancel callback for
// the Go worker that has handler.
func (s *Service) callbackJob(wf *driver.Workflow, state *phpjson.Object, key, kind, handler string, now time.Time) *driver.Job {
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
		Status: driver.JobPending, MaxAttempts: s.cfg.CallbackAttempts, AvailableAt: rowtime.Floor(now), CostUnits: 1, CreatedAt: rowtime.Floor(now),
	}
}

// debugLog is a debug log row of wf with context, as Queuety writes
// timer and signal notes.
func debugLog(wf *driver.Workflow, state *phpjson.Object, now time.Time, context map[string]any) *driver.LogEntry {
	return &driver.LogEntry{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogDebug, Context: workflowstate.EncodeJSON(context), CreatedAt: now}
}
