package queuety

import (
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// Priority orders due jobs within a queue: higher values are claimed first.
// The four values match Queuety's Priority enum; any other value makes
// Queuety PHP throw when it reads the row, so the Go side rejects it too.
type Priority = driver.Priority

// The priorities Queuety knows.
const (
	PriorityLow    = driver.PriorityLow // the default
	PriorityNormal = driver.PriorityNormal
	PriorityHigh   = driver.PriorityHigh
	PriorityUrgent = driver.PriorityUrgent
)

// JobStatus is the status of a job row.
type JobStatus = driver.JobStatus

// Job statuses, as stored in Queuety's jobs.status enum. Queuety never uses
// JobFailed for a final state: exhausted jobs are buried.
const (
	JobPending    = driver.JobPending
	JobProcessing = driver.JobProcessing
	JobCompleted  = driver.JobCompleted
	JobFailed     = driver.JobFailed
	JobBuried     = driver.JobBuried
)

// WorkflowStatus is the status of a workflow row.
type WorkflowStatus = driver.WorkflowStatus

// Workflow statuses, as stored in Queuety's workflows.status enum.
const (
	WorkflowRunning             = driver.WorkflowRunning
	WorkflowCompleted           = driver.WorkflowCompleted
	WorkflowFailed              = driver.WorkflowFailed
	WorkflowPaused              = driver.WorkflowPaused
	WorkflowWaitingForSignal    = driver.WorkflowWaitingForSignal
	WorkflowWaitingForWorkflows = driver.WorkflowWaitingForWorkflows
	WorkflowCancelled           = driver.WorkflowCancelled
)

// ParsePriority accepts 0-3 or low/normal/high/urgent (any case).
func ParsePriority(s string) (Priority, error) { return engine.ParsePriority(s) }
