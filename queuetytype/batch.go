package queuetytype

import "time"

// Batch is one row of Queuety's batches table. Zero values stand for SQL
// NULL where the column is nullable (Name, CancelledAt, FinishedAt).
type Batch struct {
	ID          int64  // the batch's id
	Name        string // its name, "" for none
	TotalJobs   int    // jobs dispatched in it
	PendingJobs int    // jobs not finished yet
	FailedJobs  int    // jobs that failed for good
	// FailedJobIDs and Options hold the stored JSON text, as written
	// (PHP json_encode style: "[]" for an empty array).
	FailedJobIDs []byte
	Options      []byte
	CancelledAt  time.Time // when it was cancelled
	CreatedAt    time.Time // when it was dispatched
	FinishedAt   time.Time // when its last job finished
}

// BatchEvent is one row of the Go engine's batch events table: a batch
// transition (the first failure, the end, a cancel) whose callback the Go
// engine has dealt with. Each happens once per batch.
type BatchEvent struct {
	BatchID int64 // the batch
	// Event is "catch" (first failure), "then" and "finally" (the batch
	// finished), or "cancel" (a cancel; runs the finally callback).
	Event string
	// Callback is the handler name the batch's options held for the
	// event ("" when none).
	Callback string
	// Runtime is where the callback was sent: "go" (a job named after the
	// callback), "php" (a job for Queuety PHP's bridge class), or "" when
	// there was nothing to run.
	Runtime   string
	JobID     int64     // the callback job, 0 when none
	CreatedAt time.Time // when the event was recorded
}

// BatchFilter narrows a batch listing. Zero fields do not filter.
type BatchFilter struct {
	// Unfinished lists only batches without finished_at.
	Unfinished bool
	Limit      int   // at most this many batches; default 100
	BeforeID   int64 // only batches with a smaller id (paging, newest first)
}
