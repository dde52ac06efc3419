package driver

import "errors"

// Errors a store returns. The engine and package queuety pass them on
// unchanged, so callers test for them with errors.Is.
var (
	// ErrNotFound means the job, workflow or schedule does not exist.
	ErrNotFound = errors.New("queuety: not found")
	// ErrDuplicate means a unique key already exists.
	ErrDuplicate = errors.New("queuety: duplicate key")
	// ErrInvalidArgument means a caller passed a value the engine cannot
	// store or act on: an empty handler, a negative delay, a priority out of
	// range, a payload that is not a JSON object, a malformed table prefix,
	// and so on.
	ErrInvalidArgument = errors.New("queuety: invalid argument")
	// ErrRowData marks an error caused by the values of a row rather than
	// by the statement or the connection: a value out of its column's
	// range, a value a CHECK constraint or trigger refuses, a value the
	// store cannot read into its Go type. Running the transaction again
	// fails the same way, so the engine narrows a claim that fails with it
	// down to the row and buries that row instead of retrying. A store
	// marks such errors (errors.Is reports them) without changing their
	// text.
	ErrRowData = errors.New("queuety: row data error")
)

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
