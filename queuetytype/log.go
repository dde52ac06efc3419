package queuetytype

import "time"

// LogEntry is one row of Queuety's logs table.
type LogEntry struct {
	ID           int64     // the row's id
	JobID        *int64    // NULL, or a job id (0 is a real value Queuety writes)
	WorkflowID   int64     // the workflow the row is about (0: none)
	StepIndex    *int      // the workflow step, when the row is about one
	Handler      string    // the job's handler
	Queue        string    // the job's queue
	Event        LogEvent  // what happened
	Attempt      *int      // the attempt, when the row is about one
	DurationMS   *int64    // how long the attempt ran
	MemoryPeakKB *int64    // the worker's peak memory (Queuety PHP)
	ErrorMessage string    // the failure's message
	ErrorClass   string    // the failure's class or Go type
	ErrorTrace   string    // the stack trace, for panics and PHP exceptions
	Context      []byte    // JSON text or nil
	CreatedAt    time.Time // when the row was written
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

// LogFilter narrows a log listing. Zero fields do not filter.
type LogFilter struct {
	JobID      int64     // only rows of this job
	WorkflowID int64     // only rows of this workflow
	Handler    string    // only rows of this handler
	Event      LogEvent  // only rows with this event
	Since      time.Time // rows created at or after this time
	Limit      int       // at most this many rows; default 1000
	// Newest returns the newest Limit rows, newest first, instead of the
	// oldest Limit rows, oldest first.
	Newest bool
	// ByTime orders the rows by created_at, then id (oldest first).
	ByTime bool
	// JobIDs keeps only rows of these jobs.
	JobIDs []int64
	// MaxTextBytes > 0 cuts error_message and error_trace to that many
	// characters and leaves out (nil) a context longer than that.
	MaxTextBytes int
}
