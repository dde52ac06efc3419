package queuetytype

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultQueue is the queue a job or workflow runs on when none is given.
const DefaultQueue = "default"

// Attempt limits.
const (
	// DefaultMaxAttempts is the attempt limit of a job dispatched without
	// one.
	DefaultMaxAttempts = 3
	// MaxAttemptsLimit is the largest attempt limit a job can have (the
	// max_attempts column is a TINYINT UNSIGNED).
	MaxAttemptsLimit = 255
)

// Job is one row of Queuety's jobs table, plus the columns the Go engine
// adds for activity timeouts and attempt fencing. Zero values stand for SQL
// NULL: a zero time, a zero id, an empty string.
type Job struct {
	ID          int64     // the job's id, stable across retries
	Queue       string    // the queue it runs on
	Handler     string    // the registered handler name it runs
	Payload     []byte    // the stored JSON text, as written (PHP json_encode style)
	PayloadHash string    // sha256 hex, set only for unique jobs
	Priority    Priority  // higher priorities are claimed first within a queue
	Status      JobStatus // pending, processing, completed, failed or buried
	Attempts    int       // attempts started so far; a claim adds one
	MaxAttempts int       // the attempt limit; the job is buried after it

	AvailableAt  time.Time // due time (second precision)
	ReservedAt   time.Time // when the current attempt was claimed or last renewed
	CompletedAt  time.Time // when the job completed
	FailedAt     time.Time // when the last attempt failed
	ErrorMessage string    // the last failure's message

	WorkflowID int64 // the workflow a step job belongs to (0: a plain job)
	StepIndex  *int  // set for workflow step jobs
	DependsOn  int64 // the job that must complete before this one runs
	BatchID    int64 // the batch the job belongs to

	ConcurrencyGroup string    // the concurrency group ("" for none)
	ConcurrencyLimit int       // the group's limit stored on the row (0 for none)
	CostUnits        int       // the cost units the job takes while it runs
	HeartbeatData    []byte    // JSON text of the last heartbeat's details, or nil
	CreatedAt        time.Time // when the job was dispatched

	// ClaimToken identifies the claim that started the current attempt.
	// Together with Attempts it fences results from superseded attempts.
	ClaimToken int64
	// ScheduleToStartAt, StartToCloseAt, ScheduleToCloseAt and
	// HeartbeatDeadline are the armed activity deadlines (absolute, UTC);
	// zero when not set.
	ScheduleToStartAt time.Time
	StartToCloseAt    time.Time
	ScheduleToCloseAt time.Time
	HeartbeatDeadline time.Time
	// LastHeartbeatAt is when the last heartbeat was recorded.
	LastHeartbeatAt time.Time

	// OmittedPayloadBytes is the length of the payload a step listing
	// left out (Payload is nil), or 0.
	OmittedPayloadBytes int64
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

// ParsePriority accepts 0-3 or low/normal/high/urgent (any case). Other
// input returns an error wrapping ErrInvalidArgument.
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

// JobFilter narrows a job listing. Zero fields do not filter.
type JobFilter struct {
	Queue      string    // only jobs on this queue
	Status     JobStatus // only jobs with this status
	Handler    string    // only jobs of this handler
	WorkflowID int64     // only the step jobs of this workflow
	BatchID    int64     // only the jobs of this batch
	Limit      int       // at most this many jobs; default 100
	AfterID    int64     // only jobs with a larger id (paging, oldest first)
	// WithoutPayload leaves Payload and HeartbeatData nil: a list that
	// does not show them reads no large column.
	WithoutPayload bool
}

// JobPreview is a job read with its large columns cut short: Payload and
// HeartbeatData hold at most the number of characters asked for.
type JobPreview struct {
	Job          *Job  // the job, with its large columns cut
	PayloadLen   int64 // the payload's full length in characters
	HeartbeatLen int64 // the heartbeat data's full length (0 when NULL)
}

// TextColumn names a column that can hold a large text value, which a
// reader takes in pieces instead of whole.
type TextColumn int

// The large text columns.
const (
	// JobPayload is the payload column of the jobs table.
	JobPayload TextColumn = iota + 1
	// JobHeartbeatData is the heartbeat_data column of the jobs table.
	JobHeartbeatData
	// WorkflowState is the state column of the workflows table.
	WorkflowState
)

// BuriedFilter narrows a retry of buried jobs. Empty fields do not filter.
type BuriedFilter struct {
	Queue   string // only jobs on this queue
	Handler string // only jobs of this handler
}

// QueueCount is the number of jobs in one queue with one status.
type QueueCount struct {
	Queue  string    // the queue
	Status JobStatus // the status counted
	Count  int64     // how many jobs
}

// QueueState is one row of Queuety's queue_states table.
type QueueState struct {
	Queue    string    // the queue
	Paused   bool      // whether workers skip the queue
	PausedAt time.Time // when it was paused
}

// HandlerMetric is one handler's line of the handler metrics, with the
// keys Queuety's handler_metrics returns.
type HandlerMetric struct {
	Handler   string `json:"handler"`   // the handler name
	Completed int64  `json:"completed"` // completed log rows
	Failed    int64  `json:"failed"`    // failed and buried log rows
	// AvgMS is the mean duration of the completed rows that have one, in
	// milliseconds, rounded to 2 decimals.
	AvgMS float64 `json:"avg_ms"`
	// P95MS is the 95th percentile of those durations (nearest rank), in
	// milliseconds.
	P95MS float64 `json:"p95_ms"`
	// ErrorRate is Failed / (Completed + Failed), rounded to 4 decimals.
	ErrorRate float64 `json:"error_rate"`
}

// StoreInfo describes an open store.
type StoreInfo struct {
	Driver  string // "mysql", "sqlite"
	Server  string // server version string
	Prefix  string // table prefix, e.g. "wp_"
	Address string // host or file, without credentials
	// Warnings are problems found at open that do not stop the store,
	// such as a server time zone that would confuse Queuety PHP workers.
	Warnings []string
	// SerialWriters reports that the store runs one write transaction at
	// a time (SQLite): a transaction waits for the one before it, so a
	// worker's claims and recordings take turns instead of overlapping.
	SerialWriters bool
	// Schema names the store's index set where it has a choice: on MySQL
	// "queuety" (Queuety PHP's indexes, the default) or "lean" (the DSN
	// parameter schema=lean); empty for the other stores.
	Schema string
}
