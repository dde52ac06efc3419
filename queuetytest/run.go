package queuetytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Stop says why RunWorkflow returned.
type Stop string

// The reasons a workflow stops.
const (
	// StopCompleted: the workflow completed.
	StopCompleted Stop = "completed"
	// StopFailed: the workflow failed (Run.Error says why).
	StopFailed Stop = "failed"
	// StopCancelled: the workflow was cancelled.
	StopCancelled Stop = "cancelled"
	// StopPaused: the workflow is paused (queuety.Client.PauseWorkflow).
	StopPaused Stop = "paused"
	// StopTime: the workflow waits for the fake clock: a Sleep, a retry
	// backoff or a delayed step, until Run.Until. Advance the clock.
	StopTime Stop = "waiting_for_time"
	// StopRetry: a step's attempt failed and the step waits for its retry
	// backoff, until Run.Until; Run.Error is the attempt's error. Advance
	// the clock.
	StopRetry Stop = "waiting_for_retry"
	// StopSignal: the workflow waits for the signals Run.Signals (a
	// WaitForSignal step, or an approval, decision or input wait). Send
	// one with kit.Client().Signal (or Approve, Reject, SubmitInput). With
	// a timeout, Run.Until is when it gives up.
	StopSignal Stop = "waiting_for_signal"
	// StopWorkflows: the workflow waits for the workflows Run.Workflows to
	// finish (a RunWorkflow child, or a WaitForWorkflow(s) step), and none
	// of them can go on.
	StopWorkflows Stop = "waiting_for_workflows"
	// StopHandler: a step of the workflow is due but nothing ran it:
	// Run.Handler names a handler the kit has not registered (or its
	// queue is paused).
	StopHandler Stop = "waiting_for_handler"
	// StopUnknown: the workflow is running, but the kit found nothing it
	// waits for: no open job and no running child (a step type only
	// Queuety PHP runs, say).
	StopUnknown Stop = "unknown"
)

// Run is where a workflow stood when RunWorkflow returned.
type Run struct {
	ID     int64
	Status queuetytype.WorkflowStatus
	Stop   Stop
	// Step is the name of the current step (the step it waits on), and
	// StepIndex its index; Step is empty once the workflow completed.
	Step      string
	StepIndex int
	// Until is when a workflow waiting for time is due again, or when a
	// signal wait gives up (zero when it waits without a timeout).
	Until time.Time
	// Signals are the signals a StopSignal workflow waits for.
	Signals []string
	// Workflows are the workflows a StopWorkflows workflow waits for.
	Workflows []int64
	// Handler is the unregistered handler of a StopHandler workflow.
	Handler string
	// Error is a failed workflow's error message, or the error of the
	// attempt a StopRetry step waits to retry.
	Error string
	// State is the workflow's public state.
	State queuety.State
	// Deadline is the workflow's execution deadline (zero when none).
	Deadline time.Time
}

// String describes the run in one line, for test output.
func (r Run) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %d %s", r.ID, r.Stop)
	if r.Step != "" && r.Stop != StopCompleted {
		fmt.Fprintf(&b, " at step %s", r.Step)
	}
	switch r.Stop {
	case StopFailed, StopRetry:
		fmt.Fprintf(&b, ": %s", r.Error)
	case StopSignal:
		fmt.Fprintf(&b, " %v", r.Signals)
	case StopWorkflows:
		fmt.Fprintf(&b, " %v", r.Workflows)
	case StopHandler:
		fmt.Fprintf(&b, " (no handler %q registered)", r.Handler)
	}
	if !r.Until.IsZero() {
		fmt.Fprintf(&b, " until %s", r.Until.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// RunWorkflow runs a workflow until it cannot go on without the test, and
// reports why: it completed, failed or was cancelled; it waits for the
// clock, a signal or other workflows; or one of its steps has no handler on
// the kit. It works like Work, so other due jobs run too (a child
// workflow's steps, say), in claim order; nothing waits on real time.
//
// Call it again after kit.Advance or a signal to let the workflow go on.
// It fails the test when the workflow does not exist or the store fails.
func (k *Kit) RunWorkflow(ctx context.Context, id int64) Run {
	k.t.Helper()
	k.Work(ctx)
	r, err := k.inspect(ctx, id)
	if err != nil {
		k.t.Fatalf("queuetytest: RunWorkflow %d: %v", id, err)
	}
	return r
}

// inspect reads where workflow id stands.
func (k *Kit) inspect(ctx context.Context, id int64) (Run, error) {
	d, err := k.client.DescribeWorkflow(ctx, id)
	if err != nil {
		return Run{}, err
	}
	wf, err := k.client.Workflow(ctx, id)
	if err != nil {
		return Run{}, err
	}
	r := Run{ID: id, Status: d.Status, Step: d.CurrentStepName, StepIndex: d.CurrentStep, Error: d.Error,
		State: queuety.State(d.State), Deadline: wf.DeadlineAt}
	switch d.Status {
	case queuetytype.WorkflowCompleted:
		r.Stop, r.Step = StopCompleted, ""
	case queuetytype.WorkflowFailed:
		r.Stop = StopFailed
	case queuetytype.WorkflowCancelled:
		r.Stop = StopCancelled
	case queuetytype.WorkflowPaused:
		r.Stop = StopPaused
	case queuetytype.WorkflowWaitingForSignal:
		r.Stop, r.Until = StopSignal, wf.WaitDeadlineAt
		if d.Wait != nil {
			r.Signals = d.Wait.WaitingFor
		}
	case queuetytype.WorkflowWaitingForWorkflows:
		r.Stop = StopWorkflows
		if d.Wait != nil {
			r.Workflows = parseIDs(d.Wait.WaitingFor)
		}
	default:
		err = k.inspectRunning(ctx, &r)
	}
	return r, err
}

// inspectRunning finds what a running workflow waits for: its open jobs,
// or its children.
func (k *Kit) inspectRunning(ctx context.Context, r *Run) error {
	jobs, err := listAllJobs(ctx, k.client, queuetytype.JobFilter{WorkflowID: r.ID, Status: queuetytype.JobPending})
	if err != nil {
		return err
	}
	now := k.clock.Now()
	for _, j := range jobs {
		if !j.AvailableAt.After(now) {
			r.Stop, r.Handler = StopHandler, j.Handler
			return nil
		}
		if r.Until.IsZero() || j.AvailableAt.Before(r.Until) {
			r.Stop, r.Until, r.Error = StopTime, j.AvailableAt, ""
			if j.Attempts > 0 {
				r.Stop = StopRetry
				if r.Error, err = k.lastError(ctx, j); err != nil {
					return err
				}
			}
		}
	}
	if r.Stop != "" {
		return nil
	}
	kids, err := k.client.ListWorkflows(ctx, queuetytype.WorkflowFilter{Parent: r.ID, Limit: maxList})
	if err != nil {
		return err
	}
	for _, c := range kids {
		if !finished(c.Status) {
			r.Workflows = append(r.Workflows, c.ID)
		}
	}
	slices.Sort(r.Workflows)
	r.Stop = StopWorkflows
	if len(r.Workflows) == 0 {
		r.Stop = StopUnknown
	}
	return nil
}

// lastError is the error message of a job's latest failed attempt.
func (k *Kit) lastError(ctx context.Context, j *queuetytype.Job) (string, error) {
	if j.ErrorMessage != "" {
		return j.ErrorMessage, nil
	}
	logs, err := k.client.Logs(ctx, queuetytype.LogFilter{JobID: j.ID})
	if err != nil {
		return "", err
	}
	for i := len(logs) - 1; i >= 0; i-- {
		if logs[i].ErrorMessage != "" {
			return logs[i].ErrorMessage, nil
		}
	}
	return "", nil
}

// finished reports whether a workflow status is final.
func finished(s queuetytype.WorkflowStatus) bool {
	return s == queuetytype.WorkflowCompleted || s == queuetytype.WorkflowFailed || s == queuetytype.WorkflowCancelled
}

func parseIDs(ss []string) []int64 {
	var out []int64
	for _, s := range ss {
		var id int64
		if _, err := fmt.Sscan(s, &id); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// RequireWorkflowStatus fails t unless workflow id has status want. The
// message says where the workflow stands (see Run.String).
func (k *Kit) RequireWorkflowStatus(t testing.TB, id int64, want queuetytype.WorkflowStatus) {
	t.Helper()
	r, err := k.inspect(context.Background(), id)
	if err != nil {
		t.Fatalf("queuetytest: RequireWorkflowStatus: %v", err)
		return
	}
	if r.Status != want {
		t.Fatalf("queuetytest: workflow %d is %s, want %s: %s", id, r.Status, want, r)
	}
}

// Inspect returns where workflow id stands now, as RunWorkflow reports
// it, without running anything. It fails the kit's test when the workflow
// does not exist.
func (k *Kit) Inspect(id int64) Run {
	k.t.Helper()
	r, err := k.inspect(context.Background(), id)
	if err != nil {
		k.t.Fatalf("queuetytest: Inspect %d: %v", id, err)
	}
	return r
}

// WorkflowState returns the public state of workflow id (no "_" keys).
// It fails the kit's test when the workflow does not exist.
func (k *Kit) WorkflowState(id int64) queuety.State {
	k.t.Helper()
	s, err := k.client.State(context.Background(), id)
	if err != nil {
		k.t.Fatalf("queuetytest: WorkflowState %d: %v", id, err)
	}
	return s
}

// Event is one entry of a workflow's history: a row of Queuety's
// workflow_events table (Source "event": step_started, step_completed,
// workflow_waiting, ...) or of its logs table (Source "log":
// workflow_started, started, completed, workflow_completed, ...).
type Event struct {
	Source string
	Name   string
	// Step is the step's name and StepIndex its index; StepIndex is -1
	// for an entry of the workflow as a whole.
	Step      string
	StepIndex int
	JobID     int64
	// Detail is the entry's error message, if any.
	Detail string
	At     time.Time
}

// String is the event's name followed by its step's name, if any.
func (e Event) String() string {
	if e.Step == "" {
		return e.Name
	}
	return e.Name + " " + e.Step
}

// Events returns the history of workflow id from its workflow_events rows
// (the steps' history), oldest first. It fails the kit's test when the
// workflow does not exist.
func (k *Kit) Events(id int64) []Event { return k.history(id, "event") }

// Logs returns the history of workflow id from its log rows
// (workflow_started, the steps' job attempts, workflow_completed, ...),
// oldest first. It fails the kit's test when the workflow does not exist.
func (k *Kit) Logs(id int64) []Event { return k.history(id, "log") }

// history returns the timeline entries of one source, read a page at a
// time (up to queuety.MaxTimelineOffset + queuety.MaxTimelineEntries).
func (k *Kit) history(id int64, source string) []Event {
	k.t.Helper()
	var out []Event
	for read := 0; ; {
		d, err := k.client.DescribeWorkflowWith(context.Background(), id, queuetytype.DescribeOptions{
			TimelineOffset: read, TimelineLimit: queuetytype.MaxTimelineEntries, JobsPerStep: 1})
		if err != nil {
			k.t.Fatalf("queuetytest: history of workflow %d: %v", id, err)
			return nil
		}
		names := map[int]string{}
		for _, s := range d.Steps {
			names[s.Index] = s.Name
		}
		for _, te := range d.Timeline {
			if te.Source != source {
				continue
			}
			e := Event{Source: te.Source, Name: te.Event, StepIndex: -1, JobID: te.JobID, Detail: te.Detail}
			if te.StepIndex != nil {
				e.StepIndex, e.Step = *te.StepIndex, names[*te.StepIndex]
			}
			e.At, _ = time.Parse(time.RFC3339Nano, te.At)
			out = append(out, e)
		}
		read += len(d.Timeline)
		if d.TimelineMore == 0 || len(d.Timeline) == 0 || read > queuetytype.MaxTimelineOffset {
			return out
		}
	}
}
