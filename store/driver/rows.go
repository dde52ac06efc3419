package driver

import (
	"strconv"
	"time"
)

// Job is one row of Queuety's jobs table, plus the columns the Go engine
// adds for activity timeouts and attempt fencing. Zero values stand for SQL
// NULL: a zero time, a zero id, an empty string.
type Job struct {
	ID          int64
	Queue       string
	Handler     string
	Payload     []byte // the stored JSON text, as written (PHP json_encode style)
	PayloadHash string // sha256 hex, set only for unique jobs
	Priority    Priority
	Status      JobStatus
	Attempts    int // attempts started so far; a claim adds one
	MaxAttempts int

	AvailableAt  time.Time // due time (second precision)
	ReservedAt   time.Time // when the current attempt was claimed or last renewed
	CompletedAt  time.Time
	FailedAt     time.Time
	ErrorMessage string

	WorkflowID int64
	StepIndex  *int // set for workflow step jobs
	DependsOn  int64
	BatchID    int64

	ConcurrencyGroup string
	ConcurrencyLimit int
	CostUnits        int
	HeartbeatData    []byte // JSON text, or nil
	CreatedAt        time.Time

	// ClaimToken identifies the claim that started the current attempt.
	// Together with Attempts it fences results from superseded attempts.
	ClaimToken int64
	// The activity deadlines (absolute, UTC). Zero when not set.
	ScheduleToStartAt time.Time
	StartToCloseAt    time.Time
	ScheduleToCloseAt time.Time
	HeartbeatDeadline time.Time
	LastHeartbeatAt   time.Time

	// OmittedPayloadBytes is the length of the payload Tx.JobListByStep
	// left out (Payload is nil), or 0.
	OmittedPayloadBytes int64
}

// Workflow is one row of Queuety's workflows table, plus the Go engine's
// run-timeout columns. State holds the stored JSON text, including the
// private "_" keys.
type Workflow struct {
	ID               int64
	Name             string
	Status           WorkflowStatus
	State            []byte
	CurrentStep      int
	TotalSteps       int
	ParentWorkflowID int64
	ParentStepIndex  *int
	StartedAt        time.Time
	CompletedAt      time.Time
	FailedAt         time.Time
	ErrorMessage     string
	// DeadlineAt is the execution deadline (MustCompleteWithin /
	// ExecutionTimeout), fixed at dispatch.
	DeadlineAt time.Time

	// RunNumber counts runs: 1 at dispatch, +1 at each RetryWorkflow and
	// continue-as-new. Zero is read as 1 (rows written by Queuety PHP).
	RunNumber      int
	RunStartedAt   time.Time
	RunDeadlineAt  time.Time // run start + run timeout, capped at DeadlineAt
	WaitDeadlineAt time.Time // when a signal wait with a timeout gives up
}

// LogEntry is one row of Queuety's logs table.
type LogEntry struct {
	ID           int64
	JobID        *int64 // NULL, or a job id (0 is a real value Queuety writes)
	WorkflowID   int64
	StepIndex    *int
	Handler      string
	Queue        string
	Event        LogEvent
	Attempt      *int
	DurationMS   *int64
	MemoryPeakKB *int64
	ErrorMessage string
	ErrorClass   string
	ErrorTrace   string
	Context      []byte // JSON text or nil
	CreatedAt    time.Time
}

// WorkflowEvent is one row of Queuety's workflow_events table. The JSON
// columns hold public state only (no "_" keys), except Output, which holds
// the raw step output as Queuety writes it.
type WorkflowEvent struct {
	ID          int64
	WorkflowID  int64
	JobID       int64
	StepIndex   int
	StepName    string
	StepType    string
	Handler     string
	Event       EventType
	Queue       string
	Attempt     *int
	Input       []byte
	Output      []byte
	StateBefore []byte
	StateAfter  []byte
	Context     []byte
	// Artifacts is the JSON list of the artifacts a step attempt stored
	// (key, kind, step_index, metadata), or nil.
	Artifacts  []byte
	Error      []byte
	DurationMS *int64
	CreatedAt  time.Time

	// Omitted holds, by column name (see EventColumns), the length in
	// bytes of each JSON column Tx.EventPage left out; those columns are
	// nil. A column that is NULL in the row is not in it.
	Omitted map[string]int64
}

// Signal is one row of Queuety's signals table.
type Signal struct {
	ID         int64
	WorkflowID int64
	Name       string
	Payload    []byte
	ReceivedAt time.Time

	// OmittedPayloadBytes is the length of the payload Tx.SignalPage left
	// out (Payload is nil), or 0.
	OmittedPayloadBytes int64
}

// Failure is a row of the Go engine's failures table: one per terminal
// failure of a job, step or workflow, with its category.
type Failure struct {
	ID           int64
	WorkflowID   int64
	JobID        int64
	StepIndex    *int
	Attempt      int
	RunNumber    int
	Category     FailureCategory
	TimeoutKind  TimeoutKind
	NonRetryable bool
	Message      string
	ErrorClass   string
	DeadlineAt   time.Time
	CreatedAt    time.Time

	// MessageCut says that Tx.FailurePage cut Message short.
	MessageCut bool
}

// FailureCategory classifies a recorded failure.
type FailureCategory string

// Failure categories (the same strings Durable Workflow uses).
const (
	FailureApplication FailureCategory = "application"
	FailureTimeout     FailureCategory = "timeout"
	FailureCancelled   FailureCategory = "cancelled"
	// FailureBudget is a workflow guardrail breach: a budget
	// (max_transitions, max_state_bytes, max_cost_units,
	// max_for_each_items, max_started_workflows) or a repeat's
	// max_iterations.
	FailureBudget   FailureCategory = "budget"
	FailureInternal FailureCategory = "internal"
)

// QueueCount is the number of jobs in one queue with one status.
type QueueCount struct {
	Queue  string
	Status JobStatus
	Count  int64
}

// QueueState is one row of Queuety's queue_states table.
type QueueState struct {
	Queue    string
	Paused   bool
	PausedAt time.Time
}

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
	LogWorkflowRewound          LogEvent = "workflow_rewound"
	LogWorkflowForked           LogEvent = "workflow_forked"
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
	EventStepItemCompleted   EventType = "step_item_completed"
	EventWorkflowReplayed    EventType = "workflow_replayed"
	EventWorkflowWaiting     EventType = "workflow_waiting"
	EventWorkflowResumed     EventType = "workflow_resumed"
)
