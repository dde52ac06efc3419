package operate

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuetytype"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// PauseWorkflow pauses a running workflow: the step in flight finishes and
// its output is merged, but the next step is not enqueued until
// ResumeWorkflow. It returns queuetytype.ErrInvalidState unless the workflow is running.
func (e *Service) PauseWorkflow(ctx context.Context, id int64) error {
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*workflowdef.Step, now time.Time) error {
		if wf.Status != driver.WorkflowRunning {
			return fmt.Errorf("%w: workflow is %s, only a running workflow can be paused", queuetytype.ErrInvalidState, wf.Status)
		}
		wf.Status = driver.WorkflowPaused
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: "", Queue: queuetytype.DefaultQueue, Event: driver.LogWorkflowPaused, CreatedAt: now}})
	})
	if err != nil {
		return fmt.Errorf("queuety: pause workflow %d: %w", id, err)
	}
	return nil
}

// ResumeWorkflow resumes a paused workflow. It enqueues the current step
// only when that step has no pending or processing job, so resuming never
// runs a step twice. It returns queuetytype.ErrInvalidState unless the workflow is
// paused.
func (e *Service) ResumeWorkflow(ctx context.Context, id int64) error {
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error {
		if wf.Status != driver.WorkflowPaused {
			return fmt.Errorf("%w: workflow is %s, only a paused workflow can be resumed", queuetytype.ErrInvalidState, wf.Status)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", queuetytype.ErrInvalidState, wf.CurrentStep)
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
			if err := e.cfg.EnqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now); err != nil {
				return err
			}
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: "", Queue: queuetytype.DefaultQueue, Event: driver.LogWorkflowResumed, CreatedAt: now}})
	})
	if err != nil {
		return fmt.Errorf("queuety: resume workflow %d: %w", id, err)
	}
	return nil
}

// CancelWorkflow cancels a workflow that has not completed: its open jobs
// are buried ("Workflow cancelled"), it becomes cancelled, and its OnCancel
// callback is enqueued. A running step is not interrupted, but its result
// is discarded. It returns queuetytype.ErrInvalidState for a completed or cancelled
// workflow.
func (e *Service) CancelWorkflow(ctx context.Context, id int64) error {
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, _ []*workflowdef.Step, now time.Time) error {
		if wf.Status == driver.WorkflowCompleted || wf.Status == driver.WorkflowCancelled {
			return fmt.Errorf("%w: workflow is already %s", queuetytype.ErrInvalidState, wf.Status)
		}
		if err := e.cfg.BuryOpenJobs(ctx, tx, wf.ID, 0, msgWorkflowCancelled, now); err != nil {
			return err
		}
		compensating, err := e.cfg.StartCompensation(ctx, tx, wf, state, now)
		if err != nil {
			return err
		}
		wf.Status = driver.WorkflowCancelled
		wf.CompletedAt = rowtime.Floor(now)
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
		if err := e.cfg.AfterTerminal(ctx, tx, wf, state, now); err != nil {
			return err
		}
		if compensating {
			return nil // the cancel callback runs after the compensations, as in Queuety
		}
		return e.cfg.EnqueueCallback(ctx, tx, wf, state, "_on_cancel", "cancel", now)
	})
	if err != nil {
		return fmt.Errorf("queuety: cancel workflow %d: %w", id, err)
	}
	return nil
}

// RetryWorkflow restarts a failed workflow at the step that failed, with a
// fresh job, and starts a new run (a fresh run deadline). The execution
// deadline is never extended, so a workflow past it would fail again at
// once: that retry is refused. It returns queuetytype.ErrInvalidState unless the
// workflow failed and its execution deadline is still ahead.
func (e *Service) RetryWorkflow(ctx context.Context, id int64) error {
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error {
		if wf.Status != driver.WorkflowFailed {
			return fmt.Errorf("%w: workflow is %s, only a failed workflow can be retried", queuetytype.ErrInvalidState, wf.Status)
		}
		if !wf.DeadlineAt.IsZero() && !now.Before(wf.DeadlineAt) {
			return fmt.Errorf("%w: its execution deadline passed at %s and a retry keeps it, so the workflow would fail again at once "+
				"(a fork runs the failed step again in a new workflow without the deadline)", queuetytype.ErrInvalidState, wf.DeadlineAt.UTC().Format(time.RFC3339))
		}
		if v, ok := state.Get("_compensated"); ok && v == true {
			return fmt.Errorf("%w: workflow was compensated and cannot be retried", queuetytype.ErrInvalidState)
		}
		if _, ok := state.Get("_compensation_next"); ok {
			return fmt.Errorf("%w: workflow is being compensated and cannot be retried", queuetytype.ErrInvalidState)
		}
		if wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow has no step %d", queuetytype.ErrInvalidState, wf.CurrentStep)
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
		e.cfg.StartRun(wf, state, now)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		if err := tx.WorkflowEndUnmark(ctx, wf.ID); err != nil {
			return err
		}
		return e.cfg.EnqueueStep(ctx, tx, wf, state, steps, wf.CurrentStep, now)
	})
	if err != nil {
		return fmt.Errorf("queuety: retry workflow %d: %w", id, err)
	}
	return nil
}

// PauseQueue stops workers from claiming jobs of a queue (Queuety's
// queue_states row). Jobs already running finish.
func (e *Service) PauseQueue(ctx context.Context, queue string) error {
	if queue == "" {
		return invalidf("queue name is empty")
	}
	err := e.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, true, e.cfg.Clock.Now()) })
	return wrap(fmt.Sprintf("pause queue %q", queue), err)
}

// ResumeQueue lets workers claim a paused queue's jobs again.
func (e *Service) ResumeQueue(ctx context.Context, queue string) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, false, e.cfg.Clock.Now()) })
	return wrap(fmt.Sprintf("resume queue %q", queue), err)
}

// RetryJob puts a buried (or failed) job back in its queue, due now, with a
// fresh attempt count. It returns queuetytype.ErrInvalidState for a job in any other
// status. For a workflow step, use RetryWorkflow instead.
func (e *Service) RetryJob(ctx context.Context, id int64) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if j.Status != driver.JobBuried && j.Status != driver.JobFailed {
			return fmt.Errorf("%w: job is %s; only buried or failed jobs can be retried", queuetytype.ErrInvalidState, j.Status)
		}
		if j.WorkflowID != 0 {
			return fmt.Errorf("%w: job %d is a step of workflow %d; retry the workflow", queuetytype.ErrInvalidState, id, j.WorkflowID)
		}
		return e.cfg.RequeueJob(ctx, tx, j, e.cfg.Clock.Now())
	})
	return wrap(fmt.Sprintf("retry job %d", id), err)
}

// PurgeCompleted deletes completed jobs that completed more than olderThan
// ago, in batches, and returns how many it deleted.
func (e *Service) PurgeCompleted(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("purge age must not be negative")
	}
	before := e.cfg.Clock.Now().Add(-olderThan)
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
