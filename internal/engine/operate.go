package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuetytype"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// lockWorkflow runs fn on a locked workflow and its decoded state.
func (e *Engine) lockWorkflow(ctx context.Context, id int64, fn func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error) error {
	return e.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		state, err := workflowstate.DecodeObject("workflow state", wf.State)
		if err != nil {
			return err
		}
		steps, err := parseSteps(state)
		if err != nil {
			return fmt.Errorf("workflow %d: malformed step definitions: %w", id, err)
		}
		return fn(tx, wf, state, steps, e.clock.Now())
	})
}

// PauseWorkflow pauses a running workflow: the step in flight finishes and
// its output is merged, but the next step is not enqueued until
// ResumeWorkflow. It returns ErrInvalidState unless the workflow is running.
func (e *Engine) PauseWorkflow(ctx context.Context, id int64) error {
	err := e.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*stepDef, now time.Time) error {
		if wf.Status != driver.WorkflowRunning {
			return fmt.Errorf("%w: workflow is %s, only a running workflow can be paused", ErrInvalidState, wf.Status)
		}
		wf.Status = driver.WorkflowPaused
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
func (e *Engine) ResumeWorkflow(ctx context.Context, id int64) error {
	err := e.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		if wf.Status != driver.WorkflowPaused {
			return fmt.Errorf("%w: workflow is %s, only a paused workflow can be resumed", ErrInvalidState, wf.Status)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", ErrInvalidState, wf.CurrentStep)
		}
		wf.Status = driver.WorkflowRunning
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		open, err := tx.JobListByWorkflow(ctx, wf.ID, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockNone)
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
			if err := e.enqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now); err != nil {
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
func (e *Engine) CancelWorkflow(ctx context.Context, id int64) error {
	err := e.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*stepDef, now time.Time) error {
		if wf.Status == driver.WorkflowCompleted || wf.Status == driver.WorkflowCancelled {
			return fmt.Errorf("%w: workflow is already %s", ErrInvalidState, wf.Status)
		}
		if err := e.buryOpenJobs(ctx, tx, wf.ID, 0, msgWorkflowCancelled, now); err != nil {
			return err
		}
		compensating := shouldCompensate(state, CompensateCancel) && compensationCount(state) > 0
		if err := e.startCompensation(ctx, tx, wf, state, CompensateCancel, now); err != nil {
			return err
		}
		wf.Status = driver.WorkflowCancelled
		wf.CompletedAt = floorSecond(now)
		wf.WaitDeadlineAt = time.Time{}
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		if _, err := tx.WorkflowEndMark(ctx, wf.ID, driver.EndedByGo, now); err != nil {
			return err
		}
		if err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(state), Event: driver.LogWorkflowCancelled, CreatedAt: now}}); err != nil {
			return err
		}
		if err := tx.FailureInsert(ctx, &driver.Failure{WorkflowID: wf.ID, Category: driver.FailureCancelled, RunNumber: max(wf.RunNumber, 1),
			Message: msgWorkflowCancelled, CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.DependencyClear(ctx, wf.ID, wf.CurrentStep); err != nil {
			return err
		}
		if err := e.afterTerminal(ctx, tx, wf, state, now); err != nil {
			return err
		}
		if compensating {
			return nil // the cancel callback runs after the compensations, as in Queuety
		}
		return e.enqueueCallback(ctx, tx, wf, state, "_on_cancel", "cancel", now)
	})
	if err != nil {
		return fmt.Errorf("queuety: cancel workflow %d: %w", id, err)
	}
	return nil
}

// RetryWorkflow restarts a failed workflow at the step that failed, with a
// fresh job, and starts a new run (a fresh run deadline). The execution
// deadline is never extended, so a workflow past it would fail again at
// once: that retry is refused. It returns ErrInvalidState unless the
// workflow failed and its execution deadline is still ahead.
func (e *Engine) RetryWorkflow(ctx context.Context, id int64) error {
	err := e.lockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) error {
		if wf.Status != driver.WorkflowFailed {
			return fmt.Errorf("%w: workflow is %s, only a failed workflow can be retried", ErrInvalidState, wf.Status)
		}
		if !wf.DeadlineAt.IsZero() && !now.Before(wf.DeadlineAt) {
			return fmt.Errorf("%w: its execution deadline passed at %s and a retry keeps it, so the workflow would fail again at once "+
				"(a fork runs the failed step again in a new workflow without the deadline)", ErrInvalidState, wf.DeadlineAt.UTC().Format(time.RFC3339))
		}
		if v, ok := state.Get("_compensated"); ok && v == true {
			return fmt.Errorf("%w: workflow was compensated and cannot be retried", ErrInvalidState)
		}
		if _, ok := state.Get("_compensation_next"); ok {
			return fmt.Errorf("%w: workflow is being compensated and cannot be retried", ErrInvalidState)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", ErrInvalidState, wf.CurrentStep)
		}
		wf.Status = driver.WorkflowRunning
		wf.FailedAt = time.Time{}
		wf.ErrorMessage = ""
		state.Delete("_wait")
		state.Delete("_waiting_for_signal")
		if steps[wf.CurrentStep].Type == queuetytype.StepForEach {
			workflowstate.ResetForEachForRetry(state, wf.CurrentStep)
		}
		wf.State = workflowstate.EncodeJSON(state)
		wf.RunNumber = max(wf.RunNumber, 1) + 1
		setRunDeadline(wf, state, now)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		if err := tx.WorkflowEndUnmark(ctx, wf.ID); err != nil {
			return err
		}
		return e.enqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now)
	})
	if err != nil {
		return fmt.Errorf("queuety: retry workflow %d: %w", id, err)
	}
	return nil
}

// PauseQueue stops workers from claiming jobs of a queue (Queuety's
// queue_states row). Jobs already running finish.
func (e *Engine) PauseQueue(ctx context.Context, queue string) error {
	if queue == "" {
		return invalidf("queue name is empty")
	}
	err := e.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, true, e.clock.Now()) })
	return wrap(fmt.Sprintf("pause queue %q", queue), err)
}

// ResumeQueue lets workers claim a paused queue's jobs again.
func (e *Engine) ResumeQueue(ctx context.Context, queue string) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, false, e.clock.Now()) })
	return wrap(fmt.Sprintf("resume queue %q", queue), err)
}

// RetryJob puts a buried (or failed) job back in its queue, due now, with a
// fresh attempt count. It returns ErrInvalidState for a job in any other
// status. For a workflow step, use RetryWorkflow instead.
func (e *Engine) RetryJob(ctx context.Context, id int64) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if j.Status != driver.JobBuried && j.Status != driver.JobFailed {
			return fmt.Errorf("%w: job is %s; only buried or failed jobs can be retried", ErrInvalidState, j.Status)
		}
		if j.WorkflowID != 0 {
			return fmt.Errorf("%w: job %d is a step of workflow %d; retry the workflow", ErrInvalidState, id, j.WorkflowID)
		}
		return e.retryJobRow(ctx, tx, j, e.clock.Now())
	})
	return wrap(fmt.Sprintf("retry job %d", id), err)
}

// PurgeCompleted deletes completed jobs that completed more than olderThan
// ago, in batches, and returns how many it deleted.
func (e *Engine) PurgeCompleted(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("purge age must not be negative")
	}
	before := e.clock.Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		err := e.store.InTx(ctx, func(tx driver.Tx) (err error) { n, err = tx.JobDeleteFinished(ctx, before, 1000); return err })
		if err != nil {
			return total, wrap("purge completed jobs", err)
		}
		total += n
		if n < 1000 {
			return total, nil
		}
	}
}
