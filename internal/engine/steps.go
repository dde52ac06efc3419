package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// This file holds the engine's entry points into workflow advancement
// (package internal/advance): a claimed step's workflow, and the
// transactions that record a step attempt's success or failure, which
// lock the step and hand it to advance.

// attachWorkflow decodes the workflow a claimed step belongs to. A workflow
// the engine cannot read makes the step fail at once with a clear error.
func (e *Engine) attachWorkflow(cj *Claimed, wf *driver.Workflow) {
	if wf == nil {
		cj.preErr = NonRetryable(orphanError(cj.Job.WorkflowID))
		return
	}
	if err := cj.flow.AttachFrom(e.flow, wf, *cj.Job.StepIndex); err != nil {
		cj.preErr = NonRetryable(err)
	}
}

// shareWorkflow attaches the workflow another claim of the same batch
// already decoded. The state and steps are read-only once attached.
func (e *Engine) shareWorkflow(cj, from *Claimed) {
	if err := cj.flow.Share(from.flow, *cj.Job.StepIndex); err != nil {
		cj.preErr = NonRetryable(err)
	}
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
			return e.flow.ExpireLocked(ctx, tx, wf, state, kind, now, &advance.Overrun{Attempt: attempt{cj, r}, Steps: steps})
		}
		if wf.Status != driver.WorkflowRunning && wf.Status != driver.WorkflowPaused &&
			!(wf.Status == driver.WorkflowWaitingForSignal && cj.Job.Handler == HandlerWaitForSignal) &&
			!(wf.Status == driver.WorkflowWaitingForWorkflows && cj.Job.Handler == HandlerWaitForWorkflows) {
			r.Outcome = observe.OutcomeBuried
			return e.buryJob(ctx, tx, row, advance.MsgAdvancedBeforeCompletion, now)
		}
		if idx != wf.CurrentStep || idx >= len(steps) {
			r.Outcome = observe.OutcomeBuried
			return e.buryJob(ctx, tx, row, advance.MsgAdvancedBeforeCompletion, now)
		}
		return e.flow.Complete(locked(ctx, tx, wf, row, state, steps, now), attempt{cj, r}, output, can)
	})
	var af *advance.AttemptFailure
	if errors.As(err, &af) {
		r.Err = af.Err // the attempt failed: retry it while attempts remain
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

// completeBranchGroups records the successful branch results of a batch,
// grouped by workflow (branches, in branchOrder), through the combiner
// that joins them with the branches other workers of this engine record
// at the same time: one transaction for all of them (see
// advance.Service.CompleteBranchGroups). It sets errs of the results it
// recorded (nil or ErrStaleAttempt) and returns the indexes of those
// that must go through Finish one by one instead.
func (e *Engine) completeBranchGroups(ctx context.Context, results []*Result, branches map[int64][]int, branchOrder []int64, errs []error, offer *EagerOffer) ([]int, []*Claimed, error) {
	var fallback []int
	var groups []*advance.BranchGroup
	var idxs [][]int
	for _, wfID := range branchOrder {
		g := &advance.BranchGroup{}
		usable := true
		for _, i := range branches[wfID] {
			out, err := stepOutput(results[i])
			if err != nil {
				usable = false
				break
			}
			g.Attempts = append(g.Attempts, attempt{results[i].Claimed, results[i]})
			g.Outputs = append(g.Outputs, out)
		}
		if !usable {
			fallback = append(fallback, branches[wfID]...)
			continue
		}
		groups = append(groups, g)
		idxs = append(idxs, branches[wfID])
	}
	if len(groups) == 0 {
		return fallback, nil, nil
	}
	handed, err := e.branches.complete(ctx, e, groups, offer)
	if err != nil {
		return nil, nil, fmt.Errorf("queuety: complete for-each branches: %w", err)
	}
	for k, g := range groups {
		if g.Fallback {
			fallback = append(fallback, idxs[k]...)
			continue
		}
		for j, i := range idxs[k] {
			errs[i] = g.Errs[j]
		}
	}
	return fallback, handed, nil
}

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
				return e.flow.ExpireLocked(ctx, tx, wf, state, kind, now, &advance.Overrun{Attempt: attempt{cj, r}, Steps: steps})
			}
		}
		if state != nil && steps != nil && *row.StepIndex < len(steps) {
			msg, class, trace := describeError(r.Err)
			if err := tx.EventInsert(ctx, e.flow.FailedEvents(locked(ctx, tx, wf, row, state, steps, now), attempt{cj, r}, msg, class, trace)); err != nil {
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
			if err := e.flow.StepJobBuried(ctx, tx, wf, row, row.ErrorMessage, now); err != nil {
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
	return e.flow.FailWorkflow(ctx, f.id, f.jobID, f.msg)
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

// ForEachItem returns the item and index a for-each branch job carries in
// its payload (__for_each). ok is false for every other job.
func (cj *Claimed) ForEachItem() (item any, index int, ok bool) {
	return cj.flow.ForEachItem(cj.Job.Handler, cj.payload)
}

// MissingFunction names the reducer or repeat condition this job needs
// that funcs does not have, or returns "" (see advance.Step.MissingFunction).
// A worker does not run such a job: it defers it, for a worker that has
// the function.
func (cj *Claimed) MissingFunction(funcs Functions) string {
	if cj.preErr != nil {
		return ""
	}
	return cj.flow.MissingFunction(cj.Job.Handler, funcs)
}

// cjWithPayload returns cj with its payload decoded from row when the
// claim did not decode it (sweeps build claims from rows).
func cjWithPayload(cj *Claimed, row *driver.Job) *Claimed {
	if cj.payload != nil {
		return cj
	}
	c := *cj
	if doc, err := workflowstate.DecodeObject("payload", row.Payload); err == nil {
		c.payload = doc
	}
	return &c
}

// orphanError is the failure of a step job whose workflow row does not
// exist (deleted, or never written): it can never run, so it is buried
// with this error instead of waiting forever.
func orphanError(workflowID int64) error {
	return fmt.Errorf("workflow %d not found: the step has no workflow to run in", workflowID)
}
