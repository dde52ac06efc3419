package queuetytype

import "encoding/json"

// WorkflowDescription is everything known about one workflow: its status,
// steps with their jobs and attempts, deadlines and timeouts, failures and
// the timeline of events. Times are ISO 8601 strings in UTC. It marshals to
// the JSON the CLI prints with --json.
type WorkflowDescription struct {
	ID              int64          `json:"id"`                          // the workflow's id
	Name            string         `json:"name"`                        // its name
	Status          WorkflowStatus `json:"status"`                      // its status
	CurrentStep     int            `json:"current_step"`                // the index of the step running or next to run
	CurrentStepName string         `json:"current_step_name,omitempty"` // that step's name
	TotalSteps      int            `json:"total_steps"`                 // how many steps the definition has
	Queue           string         `json:"queue"`                       // the queue its step jobs run on
	Priority        Priority       `json:"priority"`                    // its step jobs' priority
	MaxAttempts     int            `json:"max_attempts"`                // its step jobs' attempt limit
	State           map[string]any `json:"state"`                       // the public state (no "_" keys)
	StartedAt       string         `json:"started_at,omitempty"`        // when it was dispatched
	CompletedAt     string         `json:"completed_at,omitempty"`      // when it completed
	FailedAt        string         `json:"failed_at,omitempty"`         // when it failed
	Error           string         `json:"error,omitempty"`             // why it failed
	Deadlines       DeadlineInfo   `json:"deadlines"`                   // its execution and run deadlines
	Wait            *WaitInfo      `json:"wait,omitempty"`              // the signal wait in progress, if any
	DefinitionHash  string         `json:"definition_hash,omitempty"`   // the hash of its definition
	IdempotencyKey  string         `json:"idempotency_key,omitempty"`   // the idempotency key it was dispatched with
	OnDeadline      string         `json:"on_deadline,omitempty"`       // the handler run when its deadline passes
	OnCancel        string         `json:"on_cancel,omitempty"`         // the handler run when it is cancelled
	// ParentID and ParentStep name the workflow whose run_workflow step
	// started this one; StartedBy the workflow whose start_workflows step
	// did.
	ParentID   int64      `json:"parent_workflow_id,omitempty"`
	ParentStep *int       `json:"parent_step_index,omitempty"`
	StartedBy  int64      `json:"started_by_workflow_id,omitempty"`
	Steps      []StepInfo `json:"steps"` // its steps, in order
	// Failures are the newest DescribeFailures of the workflow's
	// failures, oldest first: FailuresTotal counts them all, FailuresMore
	// the older ones left out, and FailureCounts counts them all by
	// category.
	Failures      []FailureInfo           `json:"failures"`
	FailuresTotal int                     `json:"failures_total"`
	FailuresMore  int                     `json:"failures_more"`
	FailureCounts map[FailureCategory]int `json:"failure_counts,omitempty"`
	// Timeline is one page of the workflow's history (see
	// DescribeOptions): TimelineTotal counts the event and log rows of the
	// whole history, TimelineMore those after this page.
	Timeline      []TimelineEntry `json:"timeline"`
	TimelineTotal int             `json:"timeline_total"`
	TimelineMore  int             `json:"timeline_more"`
	// Signals are the newest DescribeSignals of the signals the workflow
	// received, oldest first: SignalsTotal counts them all, SignalsMore
	// the older ones left out.
	Signals      []SignalInfo `json:"signals,omitempty"`
	SignalsTotal int          `json:"signals_total"`
	SignalsMore  int          `json:"signals_more"`
	// StateError says why the stored state, or its step list, could not
	// be read (the row was written by hand or by a broken writer). The
	// description then holds what the row's columns, jobs, logs and
	// events say, without the state and the steps.
	StateError string `json:"state_error,omitempty"`
}

// DeadlineInfo holds a workflow's deadlines and timeouts.
type DeadlineInfo struct {
	ExecutionTimeoutSeconds int64  `json:"execution_timeout_seconds,omitempty"` // the execution timeout
	ExecutionDeadline       string `json:"execution_deadline,omitempty"`        // when the execution timeout expires
	RunTimeoutSeconds       int64  `json:"run_timeout_seconds,omitempty"`       // the timeout of each run
	Run                     int    `json:"run"`                                 // the run number (1 at dispatch)
	RunStartedAt            string `json:"run_started_at,omitempty"`            // when the current run started
	RunDeadline             string `json:"run_deadline,omitempty"`              // when the current run's timeout expires
}

// WaitInfo describes a signal wait in progress.
type WaitInfo struct {
	Type       string   `json:"type"`                 // "signal" or "workflows"
	WaitingFor []string `json:"waiting_for"`          // the signal names or workflow ids waited for
	Mode       string   `json:"mode,omitempty"`       // all, any or quorum
	TimeoutAt  string   `json:"timeout_at,omitempty"` // when the wait gives up
	// Answers lists the answers (approve, reject, input) the wait takes
	// from Client.Approve, Reject and SubmitInput; empty for a wait that
	// only a signal sent by name settles.
	Answers []string `json:"answers,omitempty"`
}

// StepInfo describes one step and the jobs that ran it.
type StepInfo struct {
	Index    int       `json:"index"`              // the step's index
	Name     string    `json:"name"`               // its name
	Type     string    `json:"type"`               // its type (single, parallel, for_each, ...)
	Handlers []string  `json:"handlers"`           // the handlers it runs
	Status   string    `json:"status"`             // not_started, pending, running, waiting, completed, failed, skipped, cancelled
	Timeouts *Timeouts `json:"timeouts,omitempty"` // its configured timeouts
	// Jobs lists up to DescribeOptions.JobsPerStep of the step's jobs (those
	// not completed first, then the newest), in id order; JobsMore counts
	// the others.
	Jobs     []JobInfoRow `json:"jobs,omitempty"`
	JobsMore int          `json:"jobs_more,omitempty"`
	// ForEach is the progress of a for_each step that has expanded.
	ForEach *ForEachInfo `json:"for_each,omitempty"`
	// Iterations counts how often a repeat step jumped back.
	Iterations *int64 `json:"iterations,omitempty"`
	// Children are the workflows a run_workflow or start_workflows step
	// started.
	Children []ChildInfo `json:"children,omitempty"`
}

// ForEachInfo is a for_each step's progress.
type ForEachInfo struct {
	Mode      string `json:"mode"`             // all, first_success or quorum
	Quorum    int    `json:"quorum,omitempty"` // the successes a quorum needs
	Items     int    `json:"items"`            // how many items the step expanded into
	Succeeded int    `json:"succeeded"`        // items that succeeded
	Failed    int    `json:"failed"`           // items that failed for good
	Open      int    `json:"open"`             // items not settled yet
	Settled   bool   `json:"settled"`          // whether the step has settled
}

// ChildInfo is a workflow started by a step.
type ChildInfo struct {
	ID     int64          `json:"id"`     // the child workflow's id
	Name   string         `json:"name"`   // its name
	Status WorkflowStatus `json:"status"` // its status
}

// Timeouts are a step's configured timeouts in ISO 8601 durations.
type Timeouts struct {
	ScheduleToStart string `json:"schedule_to_start,omitempty"` // the schedule-to-start timeout
	StartToClose    string `json:"start_to_close,omitempty"`    // the start-to-close timeout
	ScheduleToClose string `json:"schedule_to_close,omitempty"` // the schedule-to-close timeout
	Heartbeat       string `json:"heartbeat,omitempty"`         // the heartbeat timeout
	Signal          string `json:"signal,omitempty"`            // how long a signal wait waits
}

// JobInfoRow describes one job of a step.
type JobInfoRow struct {
	ID          int64         `json:"id"`                     // the job's id
	Handler     string        `json:"handler"`                // its handler
	Status      JobStatus     `json:"status"`                 // its status
	Attempts    int           `json:"attempts"`               // attempts started so far
	MaxAttempts int           `json:"max_attempts"`           // its attempt limit
	AvailableAt string        `json:"available_at,omitempty"` // when it is due
	Error       string        `json:"error,omitempty"`        // its last error
	Deadlines   JobDeadlines  `json:"deadlines"`              // its armed deadlines
	History     []AttemptInfo `json:"history"`                // its attempts, oldest first
}

// JobDeadlines are a job's armed activity deadlines.
type JobDeadlines struct {
	ScheduleToStart string `json:"schedule_to_start,omitempty"` // when the schedule-to-start timeout expires
	StartToClose    string `json:"start_to_close,omitempty"`    // when the running attempt's start-to-close timeout expires
	ScheduleToClose string `json:"schedule_to_close,omitempty"` // when the schedule-to-close timeout expires
	Heartbeat       string `json:"heartbeat,omitempty"`         // when the heartbeat timeout expires
	LastHeartbeat   string `json:"last_heartbeat,omitempty"`    // when the last heartbeat was recorded
}

// AttemptInfo is one attempt of a job.
type AttemptInfo struct {
	Attempt     int         `json:"attempt"`                // the attempt number, from 1
	StartedAt   string      `json:"started_at,omitempty"`   // when it was claimed
	EndedAt     string      `json:"ended_at,omitempty"`     // when its outcome was recorded
	Outcome     string      `json:"outcome"`                // completed, retried, buried, timed_out, running
	Error       string      `json:"error,omitempty"`        // its error message
	TimeoutKind TimeoutKind `json:"timeout_kind,omitempty"` // which deadline expired, for a timeout
	DurationMS  *int64      `json:"duration_ms,omitempty"`  // how long it ran
}

// FailureInfo is one recorded failure.
type FailureInfo struct {
	At           string          `json:"at"`                     // when it was recorded
	Category     FailureCategory `json:"category"`               // application, timeout, cancelled, budget or internal
	TimeoutKind  TimeoutKind     `json:"timeout_kind,omitempty"` // which deadline expired, for a timeout
	NonRetryable bool            `json:"non_retryable"`          // whether the error was marked NonRetryable
	JobID        int64           `json:"job_id,omitempty"`       // the job that failed (0: the workflow)
	StepIndex    *int            `json:"step_index,omitempty"`   // the step that failed
	Attempt      int             `json:"attempt,omitempty"`      // the attempt that failed
	Run          int             `json:"run,omitempty"`          // the run it failed in
	// Message is cut at DescribeTextChars characters; MessageCut says it
	// was.
	Message    string `json:"message"`
	MessageCut bool   `json:"message_cut,omitempty"`
	Deadline   string `json:"deadline,omitempty"` // the expired deadline, for a timeout
}

// TimelineEntry is one row of the workflow's history, from the
// workflow_events and logs tables, in time order.
type TimelineEntry struct {
	At        string          `json:"at"`                   // when it happened
	Source    string          `json:"source"`               // "event" or "log"
	Event     string          `json:"event"`                // the event or log event
	StepIndex *int            `json:"step_index,omitempty"` // the step it is about
	JobID     int64           `json:"job_id,omitempty"`     // the job it is about
	Attempt   *int            `json:"attempt,omitempty"`    // the attempt it is about
	Detail    string          `json:"detail,omitempty"`     // an error message or other detail
	Context   json.RawMessage `json:"context,omitempty"`    // JSON details
}

// SignalInfo is one stored signal. A payload longer than
// DescribePayloadBytes is left out (null), its length in
// PayloadOmittedBytes.
type SignalInfo struct {
	Name                string          `json:"name"`                            // the signal's name
	ReceivedAt          string          `json:"received_at"`                     // when it was stored
	Payload             json.RawMessage `json:"payload"`                         // its JSON payload (null when left out)
	PayloadOmittedBytes int64           `json:"payload_omitted_bytes,omitempty"` // the length of a payload left out
}

// Bounds of a workflow description, so that describing a workflow with a
// long history or many jobs reads a bounded number of rows.
const (
	// DefaultTimelineEntries is how many timeline entries a description
	// holds when DescribeOptions.TimelineLimit is not set.
	DefaultTimelineEntries = 500
	// MaxTimelineEntries is the most timeline entries a description holds.
	MaxTimelineEntries = 5000
	// MaxTimelineOffset is the largest DescribeOptions.TimelineOffset: a
	// page is cut from the first offset+limit rows of the events and of
	// the log rows. The history past it is read with TraceWorkflowWith or
	// ExportWorkflow.
	MaxTimelineOffset = 20000
	// DefaultJobsPerStep is how many jobs of each step a description lists
	// when DescribeOptions.JobsPerStep is not set.
	DefaultJobsPerStep = 100
	// MaxJobsPerStep is the most jobs of each step a description lists.
	MaxJobsPerStep = 1000
	// DescribeFailures is how many of a workflow's failures (the newest) a
	// description lists.
	DescribeFailures = 200
	// DescribeSignals is how many of a workflow's signals (the newest) a
	// description lists.
	DescribeSignals = 200
	// DescribeTextChars bounds a failure message a description lists: a
	// longer one is cut (FailureInfo.MessageCut).
	DescribeTextChars = 4 << 10
	// DescribePayloadBytes bounds a signal payload a description lists: a
	// longer one is left out (SignalInfo.PayloadOmittedBytes).
	DescribePayloadBytes = 4 << 10
)

// DescribeOptions bounds what DescribeWorkflowWith reads. Zero fields take
// the defaults named on each.
type DescribeOptions struct {
	// TimelineOffset skips that many timeline entries (at most
	// MaxTimelineOffset).
	TimelineOffset int
	// TimelineLimit is the most timeline entries returned
	// (DefaultTimelineEntries when 0 or less, at most MaxTimelineEntries).
	TimelineLimit int
	// JobsPerStep is the most jobs listed per step (DefaultJobsPerStep when
	// 0 or less, at most MaxJobsPerStep).
	JobsPerStep int
}

// Bounds of a trace bundle. A trace reads one page of a workflow's events
// and a bounded number of its jobs and log rows, so tracing a workflow
// with a long history reads a bounded number of rows and bytes.
// ExportWorkflow is the way to read a whole history.
const (
	// DefaultTraceEvents is how many events one trace page holds when
	// TraceOptions.Limit is not set.
	DefaultTraceEvents = 500
	// MaxTraceEvents is the most events one trace page holds.
	MaxTraceEvents = 5000
	// TraceEventBytes bounds the JSON of the events of one trace page: a
	// page ends before the event that would take it past this.
	TraceEventBytes = 16 << 20
	// TraceValueBytes bounds one JSON value of a trace (an event's input,
	// output, states, context, artifacts or error, a job's payload): a
	// longer one is left out, as null, and its length given under the
	// event's "omitted" (the job's "payload_omitted_bytes").
	TraceValueBytes = 1 << 20
	// TraceJobsPerStep is how many jobs of each step a trace lists: those
	// not completed first, then the newest.
	TraceJobsPerStep = 200
	// TraceLogs is how many log rows a trace lists: the newest.
	TraceLogs = 1000
	// TraceSignals is how many signals a trace lists: the newest.
	TraceSignals = 1000
	// TraceSignalBytes bounds the payloads of a trace's signals together:
	// a payload that would take them past it is left out, as one longer
	// than TraceValueBytes is (null, its length under the signal's
	// "payload_omitted_bytes").
	TraceSignalBytes = 4 << 20
	// TraceArtifacts is how many artifacts a trace lists: the first by
	// key.
	TraceArtifacts = 500
	// TraceArtifactBytes bounds the contents and metadata of a trace's
	// artifacts together: an artifact whose values would take them past
	// it has both left out, as a value longer than TraceValueBytes is
	// (null, its length under the artifact's "content_omitted_bytes" and
	// "metadata_omitted_bytes").
	TraceArtifactBytes = 4 << 20
)

// TraceOptions selects the page of events a trace bundle holds.
type TraceOptions struct {
	// Offset skips that many of the workflow's events (in id order).
	Offset int
	// Limit is the most events the page holds (DefaultTraceEvents when 0
	// or less, at most MaxTraceEvents). The page also ends before its
	// events' JSON passes TraceEventBytes.
	Limit int
}
