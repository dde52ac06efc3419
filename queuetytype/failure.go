package queuetytype

import "time"

// Failure is a row of the Go engine's failures table: one per terminal
// failure of a job, step or workflow, with its category.
type Failure struct {
	ID           int64           // the row's id
	WorkflowID   int64           // the workflow (0: a plain job)
	JobID        int64           // the job (0: a workflow-level failure)
	StepIndex    *int            // the step, for a step failure
	Attempt      int             // the attempt that failed
	RunNumber    int             // the workflow run it failed in
	Category     FailureCategory // application, timeout, cancelled, budget or internal
	TimeoutKind  TimeoutKind     // which deadline expired, for a timeout
	NonRetryable bool            // whether the error was marked NonRetryable
	Message      string          // the failure's message
	ErrorClass   string          // the error's Go type or PHP class
	DeadlineAt   time.Time       // the expired deadline, for a timeout
	CreatedAt    time.Time       // when it was recorded

	// MessageCut says that a bounded read cut Message short.
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

// FailureQuery selects failures. Zero fields do not filter; a query has a
// WorkflowID or JobIDs.
type FailureQuery struct {
	WorkflowID int64 // only failures of this workflow
	// JobIDs keeps only the failures of these jobs.
	JobIDs []int64
	// TimedOut keeps only the failures with a timeout kind.
	TimedOut bool
	// Limit returns at most that many rows, the newest (0: no limit).
	Limit int
	// MaxMessageChars > 0 cuts message to that many characters (and sets
	// Failure.MessageCut when it did).
	MaxMessageChars int
}

// TimeoutKind names which deadline expired; it is stored in the failures
// table's timeout_kind column.
type TimeoutKind string

// The timeout kinds. The first four are activity (step or job) timeouts;
// the last two are workflow timeouts.
const (
	TimeoutScheduleToStart TimeoutKind = "schedule_to_start"
	TimeoutStartToClose    TimeoutKind = "start_to_close"
	TimeoutScheduleToClose TimeoutKind = "schedule_to_close"
	TimeoutHeartbeat       TimeoutKind = "heartbeat"
	TimeoutExecution       TimeoutKind = "execution_timeout"
	TimeoutRun             TimeoutKind = "run_timeout"
)
