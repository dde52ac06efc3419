package driver

import "github.com/queuety/queuety-go/queuetytype"

// The rows, enums and filters a store reads and writes are defined in
// package queuetytype, which applications import; the names below let the
// store seam spell them as its own.

// DefaultQueue is queuetytype.DefaultQueue.
const DefaultQueue = queuetytype.DefaultQueue

// Row types (see package queuetytype for their fields).
type (
	Job            = queuetytype.Job
	Workflow       = queuetytype.Workflow
	LogEntry       = queuetytype.LogEntry
	WorkflowEvent  = queuetytype.WorkflowEvent
	Signal         = queuetytype.Signal
	Failure        = queuetytype.Failure
	QueueCount     = queuetytype.QueueCount
	QueueState     = queuetytype.QueueState
	Schedule       = queuetytype.Schedule
	Batch          = queuetytype.Batch
	BatchEvent     = queuetytype.BatchEvent
	Webhook        = queuetytype.Webhook
	JobPreview     = queuetytype.JobPreview
	StoreInfo      = queuetytype.StoreInfo
	JobFilter      = queuetytype.JobFilter
	LogFilter      = queuetytype.LogFilter
	WorkflowFilter = queuetytype.WorkflowFilter
	BatchFilter    = queuetytype.BatchFilter
	FailureQuery   = queuetytype.FailureQuery
)

// Enum types (see package queuetytype for their values).
type (
	Priority        = queuetytype.Priority
	JobStatus       = queuetytype.JobStatus
	WorkflowStatus  = queuetytype.WorkflowStatus
	LogEvent        = queuetytype.LogEvent
	EventType       = queuetytype.EventType
	FailureCategory = queuetytype.FailureCategory
	TimeoutKind     = queuetytype.TimeoutKind
	ScheduleType    = queuetytype.ScheduleType
	OverlapPolicy   = queuetytype.OverlapPolicy
	CatchUpPolicy   = queuetytype.CatchUpPolicy
	TextColumn      = queuetytype.TextColumn
)

// Enum values, as in package queuetytype.
const (
	PriorityLow    = queuetytype.PriorityLow
	PriorityNormal = queuetytype.PriorityNormal
	PriorityHigh   = queuetytype.PriorityHigh
	PriorityUrgent = queuetytype.PriorityUrgent

	JobPending    = queuetytype.JobPending
	JobProcessing = queuetytype.JobProcessing
	JobCompleted  = queuetytype.JobCompleted
	JobFailed     = queuetytype.JobFailed
	JobBuried     = queuetytype.JobBuried

	WorkflowRunning             = queuetytype.WorkflowRunning
	WorkflowCompleted           = queuetytype.WorkflowCompleted
	WorkflowFailed              = queuetytype.WorkflowFailed
	WorkflowPaused              = queuetytype.WorkflowPaused
	WorkflowWaitingForSignal    = queuetytype.WorkflowWaitingForSignal
	WorkflowWaitingForWorkflows = queuetytype.WorkflowWaitingForWorkflows
	WorkflowCancelled           = queuetytype.WorkflowCancelled

	LogStarted                  = queuetytype.LogStarted
	LogCompleted                = queuetytype.LogCompleted
	LogFailed                   = queuetytype.LogFailed
	LogBuried                   = queuetytype.LogBuried
	LogRetried                  = queuetytype.LogRetried
	LogWorkflowStarted          = queuetytype.LogWorkflowStarted
	LogWorkflowCompleted        = queuetytype.LogWorkflowCompleted
	LogWorkflowFailed           = queuetytype.LogWorkflowFailed
	LogWorkflowPaused           = queuetytype.LogWorkflowPaused
	LogWorkflowResumed          = queuetytype.LogWorkflowResumed
	LogWorkflowCancelled        = queuetytype.LogWorkflowCancelled
	LogWorkflowRewound          = queuetytype.LogWorkflowRewound
	LogWorkflowForked           = queuetytype.LogWorkflowForked
	LogWorkflowDeadlineExceeded = queuetytype.LogWorkflowDeadlineExceeded
	LogDebug                    = queuetytype.LogDebug

	EventStepStarted         = queuetytype.EventStepStarted
	EventStepCompleted       = queuetytype.EventStepCompleted
	EventStepFailed          = queuetytype.EventStepFailed
	EventStepBranchCompleted = queuetytype.EventStepBranchCompleted
	EventStepItemCompleted   = queuetytype.EventStepItemCompleted
	EventWorkflowReplayed    = queuetytype.EventWorkflowReplayed
	EventWorkflowWaiting     = queuetytype.EventWorkflowWaiting
	EventWorkflowResumed     = queuetytype.EventWorkflowResumed

	FailureApplication = queuetytype.FailureApplication
	FailureTimeout     = queuetytype.FailureTimeout
	FailureCancelled   = queuetytype.FailureCancelled
	FailureBudget      = queuetytype.FailureBudget
	FailureInternal    = queuetytype.FailureInternal

	TimeoutScheduleToStart = queuetytype.TimeoutScheduleToStart
	TimeoutStartToClose    = queuetytype.TimeoutStartToClose
	TimeoutScheduleToClose = queuetytype.TimeoutScheduleToClose
	TimeoutHeartbeat       = queuetytype.TimeoutHeartbeat
	TimeoutExecution       = queuetytype.TimeoutExecution
	TimeoutRun             = queuetytype.TimeoutRun

	ScheduleInterval = queuetytype.ScheduleInterval
	ScheduleCron     = queuetytype.ScheduleCron
	OverlapAllow     = queuetytype.OverlapAllow
	OverlapSkip      = queuetytype.OverlapSkip
	OverlapBuffer    = queuetytype.OverlapBuffer
	CatchUpOnce      = queuetytype.CatchUpOnce
	CatchUpAll       = queuetytype.CatchUpAll
	CatchUpNone      = queuetytype.CatchUpNone

	WorkflowSchedulePrefix = queuetytype.WorkflowSchedulePrefix

	JobPayload       = queuetytype.JobPayload
	JobHeartbeatData = queuetytype.JobHeartbeatData
	WorkflowState    = queuetytype.WorkflowState
)
