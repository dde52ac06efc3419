package queuety

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// Signal sends a named signal with a payload (anything that encodes as a
// JSON object; nil for none) to a workflow. The signal is stored in
// Queuety's signals table whatever the workflow is doing. If the workflow
// is waiting for it, the wait settles in the same transaction and the next
// step is enqueued. A signal sent before the workflow reaches its wait
// counts when it gets there. A signal that can no longer matter (the
// workflow ended, or its wait timed out first) is stored, logged as
// ignored, and changes nothing. It returns ErrNotFound for an unknown
// workflow.
func (c *Client) Signal(ctx context.Context, workflowID int64, name string, payload any) error {
	return c.engine.Signal(ctx, workflowID, name, payload)
}

// PauseWorkflow pauses a running workflow: the step in flight finishes and
// its output is merged, but the next step is not enqueued until
// ResumeWorkflow. It returns ErrInvalidState unless the workflow is running.
func (c *Client) PauseWorkflow(ctx context.Context, id int64) error {
	return c.engine.Operations().PauseWorkflow(ctx, id)
}

// ResumeWorkflow resumes a paused workflow. It enqueues the current step
// only when that step has no pending or processing job, so resuming never
// runs a step twice. It returns ErrInvalidState unless the workflow is
// paused.
func (c *Client) ResumeWorkflow(ctx context.Context, id int64) error {
	return c.engine.Operations().ResumeWorkflow(ctx, id)
}

// CancelWorkflow cancels a workflow that has not completed: its open jobs
// are buried ("Workflow cancelled"), it becomes cancelled, and its OnCancel
// callback is enqueued. A running step is not interrupted, but its result
// is discarded. It returns ErrInvalidState for a completed or cancelled
// workflow.
func (c *Client) CancelWorkflow(ctx context.Context, id int64) error {
	return c.engine.Operations().CancelWorkflow(ctx, id)
}

// RetryWorkflow restarts a failed workflow at the step that failed, with a
// fresh job, and starts a new run (a fresh run deadline). The execution
// deadline is not extended: a workflow past it fails again at once. It
// returns ErrInvalidState unless the workflow failed.
func (c *Client) RetryWorkflow(ctx context.Context, id int64) error {
	return c.engine.Operations().RetryWorkflow(ctx, id)
}

// RetryJob puts a buried (or failed) job back in its queue, due now, with a
// fresh attempt count. It returns ErrInvalidState for a job in any other
// status. For a workflow step, use RetryWorkflow instead.
func (c *Client) RetryJob(ctx context.Context, id int64) error {
	return c.engine.Operations().RetryJob(ctx, id)
}

// PurgeCompleted deletes completed jobs that completed more than olderThan
// ago, in batches, and returns how many it deleted.
func (c *Client) PurgeCompleted(ctx context.Context, olderThan time.Duration) (int64, error) {
	return c.engine.Operations().PurgeCompleted(ctx, olderThan)
}

// PauseQueue stops workers from claiming jobs of a queue (Queuety's
// queue_states row). Jobs already running finish.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.engine.Operations().PauseQueue(ctx, queue)
}

// ResumeQueue lets workers claim a paused queue's jobs again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.engine.Operations().ResumeQueue(ctx, queue)
}

// RemoveSchedule deletes a schedule; jobs it dispatched are not touched.
func (c *Client) RemoveSchedule(ctx context.Context, id int64) error {
	return c.engine.Schedules().Remove(ctx, id)
}

// SetScheduleEnabled enables or disables a schedule. Enabling moves a
// next run that lies in the past to the next slot after now, so a schedule
// disabled for a while does not fire for the time it was off.
func (c *Client) SetScheduleEnabled(ctx context.Context, id int64, enabled bool) error {
	return c.engine.Schedules().SetEnabled(ctx, id, enabled)
}

// RunScheduleNow fires a schedule once now, outside its timetable (its
// next run is unchanged), honouring its overlap policy. It returns the id
// of the job or workflow it dispatched, or 0 when the policy held it back.
func (c *Client) RunScheduleNow(ctx context.Context, id int64) (int64, error) {
	return c.engine.Schedules().RunNow(ctx, id)
}

// DescribeWorkflow reads a workflow with its jobs, logs, events, signals
// and failures, in one transaction: the first DefaultTimelineEntries
// entries of its timeline, up to DefaultJobsPerStep jobs of each step and
// the newest DescribeFailures failures and DescribeSignals signals (see
// DescribeWorkflowWith).
func (c *Client) DescribeWorkflow(ctx context.Context, id int64) (*queuetytype.WorkflowDescription, error) {
	return c.views().DescribeWorkflow(ctx, id)
}

// DescribeWorkflowWith is DescribeWorkflow with the page of the timeline
// and the jobs per step that opts selects. The description counts what it
// leaves out: TimelineTotal and TimelineMore, each step's JobsMore,
// FailuresTotal and FailuresMore (FailureCounts counts every failure by
// category), SignalsTotal and SignalsMore. Failure messages are cut at
// DescribeTextChars characters and signal payloads over
// DescribePayloadBytes left out, with their length.
func (c *Client) DescribeWorkflowWith(ctx context.Context, id int64, opts queuetytype.DescribeOptions) (*queuetytype.WorkflowDescription, error) {
	return c.views().DescribeWorkflowWith(ctx, id, opts)
}

// Approve answers the approval or decision wait a workflow is in with
// approval (Queuety's approve_workflow): it sends the signal that wait
// listens for ("approval" for WaitForApproval, the approve signal of
// WaitForDecision), with data (nil for none) as its payload, and returns
// the signal's name. A workflow that is not waiting, or whose wait takes
// no approval (a plain signal wait), gets an error wrapping
// ErrInvalidState and nothing is stored; so does a second approval of a
// wait the first one settled. Send a signal by name (Signal) to deliver
// one before the workflow reaches its wait.
func (c *Client) Approve(ctx context.Context, workflowID int64, data any) (string, error) {
	return c.engine.Answer(ctx, workflowID, workflowstate.AnswerApprove, data)
}

// Reject answers the decision wait a workflow is in with rejection
// (Queuety's reject_workflow): it sends the decision's reject signal,
// "rejected" by default, and returns its name. An approval wait cannot be
// rejected (it listens for its approval only, as in Queuety): Reject of
// one, or of a workflow that is not waiting, returns an error wrapping
// ErrInvalidState and stores nothing.
func (c *Client) Reject(ctx context.Context, workflowID int64, data any) (string, error) {
	return c.engine.Answer(ctx, workflowID, workflowstate.AnswerReject, data)
}

// SubmitInput answers the input wait a workflow is in (Queuety's
// submit_workflow_input): it sends the signal that wait listens for,
// "input" by default, with data as its payload, and returns its name. A
// workflow that is not waiting for input gets an error wrapping
// ErrInvalidState and nothing is stored.
func (c *Client) SubmitInput(ctx context.Context, workflowID int64, data any) (string, error) {
	return c.engine.Answer(ctx, workflowID, workflowstate.AnswerInput, data)
}

// StateAt returns the public state a workflow had right after step idx
// completed (Queuety's workflow_state_at), from its event log. It returns
// an error wrapping ErrNotFound when no event records that step.
func (c *Client) StateAt(ctx context.Context, workflowID int64, idx int) (State, error) {
	return c.views().StateAt(ctx, workflowID, idx)
}

// RewindWorkflow moves a workflow back to right after step toStep
// (Queuety's rewind_workflow): the state recorded after that step comes
// back, open jobs are buried as superseded, and the next step runs again.
func (c *Client) RewindWorkflow(ctx context.Context, workflowID int64, toStep int) error {
	return c.engine.Operations().RewindWorkflow(ctx, workflowID, toStep)
}

// ForkWorkflow starts a copy of a workflow (state and position) that runs
// on from the same step on its own, and returns its id (Queuety's
// fork_workflow).
func (c *Client) ForkWorkflow(ctx context.Context, workflowID int64) (int64, error) {
	return c.engine.Operations().ForkWorkflow(ctx, workflowID)
}

// ExportWorkflow returns a workflow's history (its row and state, jobs,
// events, logs, signals and wait dependencies) as JSON in Queuety's export
// format (export_workflow), which ReplayWorkflow and Queuety PHP's
// replay_workflow read. It is the whole history, read at once: for a
// bounded view, page through TraceWorkflowWith.
func (c *Client) ExportWorkflow(ctx context.Context, workflowID int64) ([]byte, error) {
	o, err := c.views().ExportWorkflow(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	return workflowstate.EncodeJSON(o), nil
}

// ReplayWorkflow writes an export (from ExportWorkflow or Queuety PHP's
// export_workflow) into a new workflow, "<name>_replay_<unix time>", with
// the exported state, status, position and history; a running one runs on
// from its current step. It returns the new workflow's id.
func (c *Client) ReplayWorkflow(ctx context.Context, export []byte) (int64, error) {
	o, err := workflowstate.DecodeObject("workflow export", export)
	if err != nil {
		return 0, fmt.Errorf("queuety: replay workflow: %w", err)
	}
	return c.engine.Operations().ReplayWorkflow(ctx, o)
}

// TraceWorkflow returns the first page of a workflow's trace bundle as
// JSON (Queuety's workflow_trace): the workflow, its events grouped by
// step with the latest outcome of each, and its events, jobs, logs,
// signals and wait dependencies. See TraceWorkflowWith for its bounds;
// ExportWorkflow returns the whole history.
func (c *Client) TraceWorkflow(ctx context.Context, workflowID int64) ([]byte, error) {
	return c.TraceWorkflowWith(ctx, workflowID, queuetytype.TraceOptions{})
}

// TraceWorkflowWith returns the page of a workflow's trace bundle that
// opts selects, as JSON. A page holds up to opts.Limit events
// (DefaultTraceEvents by default, at most MaxTraceEvents) and ends before
// its events' JSON passes TraceEventBytes; a JSON value longer than
// TraceValueBytes is null, with its length under the event's "omitted".
// Jobs (TraceJobsPerStep per step), log rows (the newest TraceLogs, their
// error texts cut at 8 KiB), signals (the newest TraceSignals, their
// payloads together up to TraceSignalBytes) and artifacts (the first
// TraceArtifacts by key, their values together up to TraceArtifactBytes)
// are bounded too. The bundle's "page" object counts what was left out,
// and its next_offset is the Offset of the next page (null after the
// last).
func (c *Client) TraceWorkflowWith(ctx context.Context, workflowID int64, opts queuetytype.TraceOptions) ([]byte, error) {
	o, err := c.views().TraceWorkflowWith(ctx, workflowID, opts)
	if err != nil {
		return nil, err
	}
	return workflowstate.EncodeJSON(o), nil
}
