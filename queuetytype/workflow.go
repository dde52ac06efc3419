package queuetytype

import "time"

// Workflow is one row of Queuety's workflows table, plus the Go engine's
// run-timeout columns. State holds the stored JSON text, including the
// private "_" keys.
type Workflow struct {
	ID               int64          // the workflow's id
	Name             string         // the workflow's name (its definition's name)
	Status           WorkflowStatus // running, completed, failed, paused, waiting or cancelled
	State            []byte         // the stored JSON text of the state, "_" keys included
	CurrentStep      int            // the index of the step running or next to run
	TotalSteps       int            // how many steps the definition has
	ParentWorkflowID int64          // the workflow whose run_workflow step started it (0: none)
	ParentStepIndex  *int           // that parent's step
	StartedAt        time.Time      // when it was dispatched
	CompletedAt      time.Time      // when it completed
	FailedAt         time.Time      // when it failed
	ErrorMessage     string         // why it failed
	// DeadlineAt is the execution deadline (MustCompleteWithin /
	// ExecutionTimeout), fixed at dispatch.
	DeadlineAt time.Time

	// RunNumber counts runs: 1 at dispatch, +1 at each retry of the
	// workflow and continue-as-new. Zero is read as 1 (rows written by
	// Queuety PHP).
	RunNumber      int
	RunStartedAt   time.Time // when the current run started
	RunDeadlineAt  time.Time // run start + run timeout, capped at DeadlineAt
	WaitDeadlineAt time.Time // when a signal wait with a timeout gives up
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

// WorkflowFilter narrows a workflow listing. Zero fields do not filter.
type WorkflowFilter struct {
	Status WorkflowStatus // only workflows with this status
	Name   string         // only workflows with this name
	Parent int64          // child workflows of this parent (parent_workflow_id)
	Limit  int            // at most this many workflows; default 100
	// WithoutState leaves State nil: a list that does not show it reads
	// no large column.
	WithoutState bool
}

// WorkflowEvent is one row of Queuety's workflow_events table. The JSON
// columns hold public state only (no "_" keys), except Output, which holds
// the raw step output as Queuety writes it.
type WorkflowEvent struct {
	ID          int64     // the row's id
	WorkflowID  int64     // the workflow
	JobID       int64     // the step job the event is about (0: none)
	StepIndex   int       // the step
	StepName    string    // the step's name
	StepType    string    // the step's type (single, parallel, for_each, ...)
	Handler     string    // the step's handler
	Event       EventType // what happened
	Queue       string    // the step job's queue
	Attempt     *int      // the attempt, when the event is about one
	Input       []byte    // JSON text: the state the step received
	Output      []byte    // JSON text: the step's raw output
	StateBefore []byte    // JSON text: the public state before the step
	StateAfter  []byte    // JSON text: the public state after the step
	Context     []byte    // JSON text: event details
	// Artifacts is the JSON list of the artifacts a step attempt stored
	// (key, kind, step_index, metadata), or nil.
	Artifacts []byte
	// Chunks is the JSON list of the chunk references a streaming step
	// attempt recorded (job_id, workflow_id, step_index, chunk_index,
	// content), or nil.
	Chunks     []byte
	Error      []byte    // JSON text: the failure, for step_failed
	DurationMS *int64    // how long the step ran
	CreatedAt  time.Time // when the event was written

	// Omitted holds, by column name ("input", "output", "state_before",
	// "state_after", "context", "artifacts", "chunks", "error"), the length in bytes
	// of each JSON column a page of events left out; those columns are
	// nil. A column that is NULL in the row is not in it.
	Omitted map[string]int64
}

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

// Signal is one row of Queuety's signals table.
type Signal struct {
	ID         int64     // the row's id
	WorkflowID int64     // the workflow it was sent to
	Name       string    // the signal's name
	Payload    []byte    // JSON text, or nil
	ReceivedAt time.Time // when it was stored

	// OmittedPayloadBytes is the length of the payload a page of signals
	// left out (Payload is nil), or 0.
	OmittedPayloadBytes int64
}

// StepType names a kind of workflow step, as stored in _steps[i].type.
type StepType string

// The step types the Go engine builds and runs, with Queuety's names.
// Steps of other types written by Queuety PHP are enqueued faithfully when
// a workflow reaches them, for a PHP worker to run.
const (
	// StepSingle runs one handler as one job (Queuety's then()).
	StepSingle StepType = "single"
	// StepParallel runs several handlers, one job each, and continues when
	// all have succeeded (parallel()).
	StepParallel StepType = "parallel"
	// StepDelay waits a number of seconds (sleep(), delay()).
	StepDelay StepType = "delay"
	// StepWaitForSignal waits for one or more signals
	// (wait_for_signal(s), wait_for_approval(), wait_for_decision(),
	// wait_for_input()).
	StepWaitForSignal StepType = "wait_for_signal"
	// StepForEach runs one branch job per item of a state list
	// (for_each()).
	StepForEach StepType = "for_each"
	// StepRepeat jumps back to an earlier step while, or until, a
	// condition holds (repeat_while(), repeat_until()).
	StepRepeat StepType = "repeat"
	// StepRunWorkflow starts a child workflow and waits for it
	// (run_workflow()).
	StepRunWorkflow StepType = "run_workflow"
	// StepStartWorkflows starts one independent workflow per item of a
	// state list and records their ids (start_workflows()).
	StepStartWorkflows StepType = "start_workflows"
	// StepWaitForWorkflows waits for other workflows to finish
	// (wait_for_workflow(s), wait_for_workflow_group()).
	StepWaitForWorkflows StepType = "wait_for_workflows"
)

// For-each completion modes (Queuety's ForEachMode), stored as
// _steps[i].mode.
const (
	// ForEachAll settles the step when every item has settled.
	ForEachAll = "all"
	// ForEachFirstSuccess settles the step at the first item that
	// succeeds.
	ForEachFirstSuccess = "first_success"
	// ForEachQuorum settles the step when a quorum of items succeeded.
	ForEachQuorum = "quorum"
)

// Workflow wait modes (Queuety's WaitMode), stored as _steps[i].wait_mode.
const (
	// WaitAll waits for every awaited workflow or signal.
	WaitAll = "all"
	// WaitAny waits for the first one.
	WaitAny = "any"
	// WaitQuorum waits for a quorum of them.
	WaitQuorum = "quorum"
)

// ForEachResult is the aggregate a settled for-each step stores under its
// result key, and what a reducer receives.
type ForEachResult struct {
	Mode      string // all, first_success or quorum
	Quorum    int    // the required successes in quorum mode, else 0
	Total     int    // items
	Succeeded int    // items that succeeded
	Failed    int    // items that failed for good
	// Winner is the first branch that succeeded, nil when none did.
	Winner *ForEachBranch
	// Results are the succeeded branches and Failures the failed ones,
	// both in item order.
	Results  []ForEachBranch
	Failures []ForEachFailure
}

// ForEachBranch is one succeeded for-each branch.
type ForEachBranch struct {
	Index  int            // the item's index
	Item   any            // the item
	Output map[string]any // what the branch handler returned
	JobID  int64          // the branch's job
}

// ForEachFailure is one for-each branch that failed for good.
type ForEachFailure struct {
	Index int    // the item's index
	Item  any    // the item
	Error string // the branch's last error message
	JobID int64  // the branch's job
}
