package queuety

import (
	"fmt"
	"strconv"
	"strings"
)

// Priority orders due jobs within a queue: higher values are claimed first.
// The four values match Queuety's Priority enum; any other value makes
// Queuety PHP throw when it reads the row, so the Go side rejects it too.
type Priority int

// The priorities Queuety knows.
const (
	PriorityLow    Priority = 0 // the default
	PriorityNormal Priority = 1
	PriorityHigh   Priority = 2
	PriorityUrgent Priority = 3
)

// String returns the lower-case name of p ("low", "normal", "high", "urgent").
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	case PriorityUrgent:
		return "urgent"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// Valid reports whether p is one of the four Queuety priorities.
func (p Priority) Valid() bool { return p >= PriorityLow && p <= PriorityUrgent }

// ParsePriority accepts 0-3 or low/normal/high/urgent (any case).
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0", "low":
		return PriorityLow, nil
	case "1", "normal":
		return PriorityNormal, nil
	case "2", "high":
		return PriorityHigh, nil
	case "3", "urgent":
		return PriorityUrgent, nil
	}
	return 0, fmt.Errorf("%w: priority %q (want 0-3 or low, normal, high, urgent)", ErrInvalidArgument, s)
}

// JobStatus is the status column of a job row.
type JobStatus string

// Job statuses, as stored in Queuety's jobs.status enum. Queuety never uses
// JobFailed for a final state: exhausted jobs are buried.
const (
	JobPending    JobStatus = "pending"
	JobProcessing JobStatus = "processing"
	JobCompleted  JobStatus = "completed"
	JobFailed     JobStatus = "failed"
	JobBuried     JobStatus = "buried"
)

// Valid reports whether s is one of Queuety's job statuses.
func (s JobStatus) Valid() bool {
	switch s {
	case JobPending, JobProcessing, JobCompleted, JobFailed, JobBuried:
		return true
	}
	return false
}

// WorkflowStatus is the status column of a workflow row.
type WorkflowStatus string

// Workflow statuses, as stored in Queuety's workflows.status enum.
const (
	WorkflowRunning             WorkflowStatus = "running"
	WorkflowCompleted           WorkflowStatus = "completed"
	WorkflowFailed              WorkflowStatus = "failed"
	WorkflowPaused              WorkflowStatus = "paused"
	WorkflowWaitingForSignal    WorkflowStatus = "waiting_for_signal"
	WorkflowWaitingForWorkflows WorkflowStatus = "waiting_for_workflows"
	WorkflowCancelled           WorkflowStatus = "cancelled"
)

// Terminal reports whether a workflow in status s can no longer advance.
func (s WorkflowStatus) Terminal() bool {
	return s == WorkflowCompleted || s == WorkflowFailed || s == WorkflowCancelled
}

// Valid reports whether s is one of Queuety's workflow statuses.
func (s WorkflowStatus) Valid() bool {
	switch s {
	case WorkflowRunning, WorkflowCompleted, WorkflowFailed, WorkflowPaused,
		WorkflowWaitingForSignal, WorkflowWaitingForWorkflows, WorkflowCancelled:
		return true
	}
	return false
}

// LogEvent is the event column of a logs row.
type LogEvent string

// Log events written by the engine, with the same meaning as in Queuety.
const (
	LogStarted                  LogEvent = "started"
	LogCompleted                LogEvent = "completed"
	LogFailed                   LogEvent = "failed"
	LogBuried                   LogEvent = "buried"
	LogRetried                  LogEvent = "retried"
	LogWorkflowStarted          LogEvent = "workflow_started"
	LogWorkflowCompleted        LogEvent = "workflow_completed"
	LogWorkflowFailed           LogEvent = "workflow_failed"
	LogWorkflowPaused           LogEvent = "workflow_paused"
	LogWorkflowResumed          LogEvent = "workflow_resumed"
	LogWorkflowCancelled        LogEvent = "workflow_cancelled"
	LogWorkflowDeadlineExceeded LogEvent = "workflow_deadline_exceeded"
	LogDebug                    LogEvent = "debug"
)

// EventType is the event column of a workflow_events row.
type EventType string

// Workflow event types written by the engine.
const (
	EventStepStarted         EventType = "step_started"
	EventStepCompleted       EventType = "step_completed"
	EventStepFailed          EventType = "step_failed"
	EventStepBranchCompleted EventType = "step_branch_completed"
	EventWorkflowWaiting     EventType = "workflow_waiting"
	EventWorkflowResumed     EventType = "workflow_resumed"
)
