package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// Operations returns the operator actions on e's store: pausing,
// resuming, cancelling, retrying, rewinding, forking and replaying
// workflows, and retrying, burying, deleting and purging jobs (package
// internal/operate). They run the engine's transitions given here.
func (e *Engine) Operations() *operate.Service { return e.operations }

// newOperations builds the operator actions of e's store, with the engine
// transitions they run inside their transactions.
func (e *Engine) newOperations() *operate.Service {
	return operate.New(e.store, operate.Config{
		Clock: e.clock,
		LockWorkflow: func(ctx context.Context, id int64, fn operate.Locked) error {
			return e.lockWorkflow(ctx, id, fn)
		},
		EnqueueStep:       e.enqueueStep,
		BuryJob:           e.buryJob,
		BuryOpenJobs:      e.flow.BuryOpenJobs,
		StartCompensation: e.startCancelCompensation,
		AfterTerminal:     e.afterTerminal,
		StepJobBuried:     e.flow.StepJobBuried,
		EnqueueCallback:   e.flow.EnqueueCallback,
		RequeueJob:        e.retryJobRow,
		StartRun:          dispatch.StartRun,
		ClearAttempt:      clearAttemptDeadlines,
	})
}

// startCancelCompensation starts the compensations a cancel of wf asks
// for, and reports whether any were started (the cancel callback then
// runs after them).
func (e *Engine) startCancelCompensation(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) (bool, error) {
	compensating := advance.ShouldCompensate(state, CompensateCancel) && advance.CompensationCount(state) > 0
	return compensating, e.flow.StartCompensation(ctx, tx, wf, state, CompensateCancel, now)
}

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

// retryJobRow puts a locked buried or failed plain job back in its queue,
// due now, with a fresh attempt count, and logs `retried`.
func (e *Engine) retryJobRow(ctx context.Context, tx driver.Tx, j *driver.Job, now time.Time) error {
	j.Status = driver.JobPending
	j.Attempts = 0
	j.AvailableAt = rowtime.Floor(now)
	j.ReservedAt, j.FailedAt = time.Time{}, time.Time{}
	j.ErrorMessage = ""
	j.ClaimToken = 0
	clearAttemptDeadlines(j)
	j.ScheduleToStartAt, j.ScheduleToCloseAt = time.Time{}, time.Time{}
	if doc, err := workflowstate.DecodeObject("payload", j.Payload); err == nil {
		dispatch.ApplyScheduleDeadlines(j, jobruntime.Parse(doc).Timeouts, now)
	}
	if err := tx.JobUpdate(ctx, j); err != nil {
		return err
	}
	return tx.LogInsert(ctx, []*driver.LogEntry{{JobID: ptr(j.ID), Handler: j.Handler, Queue: j.Queue, Event: driver.LogRetried, CreatedAt: now,
		Context: workflowstate.EncodeJSON(map[string]any{"type": "manual_retry", "attempts_reset": true})}})
}
