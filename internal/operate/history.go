package operate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file holds Queuety's time-travel tools that write: rewinding a
// workflow to the state it had after a step (from its events), and
// forking a copy of a workflow. Reading that state is a read view
// (internal/readview).

// Messages and log contexts Queuety writes for these operations.
const msgSupersededByRewind = "Superseded by workflow rewind"

// StateAfterStep returns the public state recorded right after step idx (the
// newest step_completed or workflow_resumed event of that step with a
// state, as Queuety's get_state_at_step reads it), or nil. It reads that
// one event.
func StateAfterStep(ctx context.Context, tx driver.Tx, id int64, idx int) (*phpjson.Object, error) {
	events, err := tx.EventPage(ctx, driver.EventQuery{WorkflowID: id, StepIndex: &idx,
		Events: []driver.EventType{driver.EventStepCompleted, driver.EventWorkflowResumed}, WithStateAfter: true,
		Order: driver.EventsNewestFirst, Limit: 1})
	if err != nil || len(events) == 0 {
		return nil, err
	}
	return workflowstate.DecodeObject("event state", events[0].StateAfter)
}

// RewindWorkflow moves a workflow back to right after step toStep (Queuety's
// rewind_workflow): its public state becomes the one recorded after that
// step, its open jobs are buried ("Superseded by workflow rewind") so no
// worker continues the abandoned path, and the next step is enqueued; the
// workflow runs again whatever its status was. It returns queuetytype.ErrNotFound when
// no state is recorded for toStep, and queuetytype.ErrInvalidState when toStep is the
// last step (there is nothing to run after it).
func (e *Service) RewindWorkflow(ctx context.Context, id int64, toStep int) error {
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error {
		if toStep < 0 || toStep+1 >= len(steps) {
			return fmt.Errorf("%w: step %d is not a step before the last one (the workflow has %d)", queuetytype.ErrInvalidState, toStep, len(steps))
		}
		snap, err := StateAfterStep(ctx, tx, id, toStep)
		if err != nil {
			return err
		}
		if snap == nil {
			return fmt.Errorf("%w: no recorded state for workflow %d at step %d", queuetytype.ErrNotFound, id, toStep)
		}
		// Event snapshots hold the public state only: the runtime keys
		// come from the live row, in Queuety's order.
		next := snap
		for _, k := range []string{"_steps", "_queue", "_priority", "_max_attempts"} {
			v, _ := state.Get(k)
			next.Set(k, v)
		}
		for _, k := range state.Keys() {
			if _, set := next.Get(k); set || !workflowstate.IsPrivateKey(k) {
				continue
			}
			switch k {
			case "_wait", "_waiting_for_signal", "_compensation_next": // the abandoned path's
				continue
			}
			v, _ := state.Get(k)
			next.Set(k, v)
		}
		jobs, err := tx.JobListByWorkflow(ctx, wf.ID, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			j.Status, j.ErrorMessage = driver.JobBuried, msgSupersededByRewind
			e.cfg.ClearAttempt(j)
			if err := tx.JobUpdate(ctx, j); err != nil {
				return err
			}
		}
		if err := tx.DependencyClear(ctx, wf.ID, wf.CurrentStep); err != nil {
			return err
		}
		wf.Status, wf.CurrentStep = driver.WorkflowRunning, toStep+1
		// Queuety clears error_message and failed_at and leaves completed_at.
		wf.ErrorMessage, wf.FailedAt, wf.WaitDeadlineAt = "", time.Time{}, time.Time{}
		wf.State = workflowstate.EncodeJSON(next)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		if err := e.cfg.EnqueueStep(ctx, tx, wf, next, steps, wf.CurrentStep, now); err != nil {
			return err
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: wf.Name, Queue: workflowstate.Queue(next),
			Event: driver.LogWorkflowRewound, Context: workflowstate.EncodeJSON(map[string]any{"rewound_to_step": toStep}), CreatedAt: now}})
	})
	if err != nil {
		return fmt.Errorf("queuety: rewind workflow %d to step %d: %w", id, toStep, err)
	}
	return nil
}

// ForkWorkflow copies a workflow, state and position included, into a new
// running workflow named "<name>_fork_<unix time>" that continues from the
// same step on its own (Queuety's fork_workflow), and returns its id. Both
// get a workflow_forked log row naming the other. A completed workflow (or
// one whose position is past its last step) has no step left to run: its
// fork would stay running with no job forever, so it returns
// queuetytype.ErrInvalidState and creates nothing.
func (e *Service) ForkWorkflow(ctx context.Context, id int64) (int64, error) {
	var forked int64
	err := e.cfg.LockWorkflow(ctx, id, func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error {
		if wf.Status == driver.WorkflowCompleted || wf.CurrentStep >= wf.TotalSteps || wf.CurrentStep >= len(steps) {
			return fmt.Errorf("%w: workflow %d is %s with no step left to run (step %d of %d): a fork runs on from the current step",
				queuetytype.ErrInvalidState, wf.ID, wf.Status, wf.CurrentStep, len(steps))
		}
		name := wf.Name + "_fork_" + strconv.FormatInt(now.Unix(), 10)
		if len(name) > 255 {
			name = name[len(name)-255:]
		}
		fork := &driver.Workflow{Name: name, Status: driver.WorkflowRunning, State: wf.State, CurrentStep: wf.CurrentStep,
			TotalSteps: wf.TotalSteps, StartedAt: rowtime.Floor(now), RunNumber: 1, RunStartedAt: now}
		if err := tx.WorkflowInsert(ctx, fork); err != nil {
			return err
		}
		forked = fork.ID
		if err := e.cfg.EnqueueStep(ctx, tx, fork, state, steps, fork.CurrentStep, now); err != nil {
			return err
		}
		queue := workflowstate.Queue(state)
		return tx.LogInsert(ctx, []*driver.LogEntry{
			{WorkflowID: wf.ID, Handler: wf.Name, Queue: queue, Event: driver.LogWorkflowForked,
				Context: workflowstate.EncodeJSON(map[string]any{"forked_workflow_id": fork.ID}), CreatedAt: now},
			{WorkflowID: fork.ID, Handler: name, Queue: queue, Event: driver.LogWorkflowForked,
				Context: workflowstate.EncodeJSON(map[string]any{"forked_from_workflow_id": wf.ID}), CreatedAt: now},
		})
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: fork workflow %d: %w", id, err)
	}
	return forked, nil
}
