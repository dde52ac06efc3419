package driver

import (
	"context"
	"time"
)

// Batch is one row of Queuety's batches table. Zero values stand for SQL
// NULL where the column is nullable (Name, CancelledAt, FinishedAt).
type Batch struct {
	ID          int64
	Name        string
	TotalJobs   int
	PendingJobs int
	FailedJobs  int
	// FailedJobIDs and Options hold the stored JSON text, as written
	// (PHP json_encode style: "[]" for an empty array).
	FailedJobIDs []byte
	Options      []byte
	CancelledAt  time.Time
	CreatedAt    time.Time
	FinishedAt   time.Time
}

// BatchEvent is one row of the Go engine's batch events table
// ({prefix}queuety_go_batch_events): a batch transition (the first
// failure, the end, a cancel) whose callback the Go engine has dealt with.
// The primary key (batch, event) makes each one happen once.
type BatchEvent struct {
	BatchID int64
	// Event is "catch" (first failure), "then" and "finally" (the batch
	// finished), or "cancel" (CancelBatch; runs the finally callback).
	Event string
	// Callback is the handler name the batch's options held for the
	// event ("" when none).
	Callback string
	// Runtime is where the callback was sent: "go" (a job named after the
	// callback), "php" (a job for Queuety PHP's bridge class), or "" when
	// there was nothing to run.
	Runtime   string
	JobID     int64 // the callback job, 0 when none
	CreatedAt time.Time
}

// BatchFilter narrows BatchList. Zero fields do not filter.
type BatchFilter struct {
	// Unfinished lists only batches without finished_at.
	Unfinished bool
	Limit      int   // default 100
	BeforeID   int64 // only batches with a smaller id (paging, newest first)
}

// BatchTx holds the batch row operations of a Tx.
type BatchTx interface {
	// BatchInsert inserts a batch and sets its ID.
	BatchInsert(ctx context.Context, b *Batch) error
	// BatchGet reads one batch.
	BatchGet(ctx context.Context, id int64, lock LockMode) (*Batch, error)
	// BatchGetMany reads batches by id, in id order; missing ids are
	// skipped. With LockUpdate the rows are locked in id order.
	BatchGetMany(ctx context.Context, ids []int64, lock LockMode) ([]*Batch, error)
	// BatchUpdate writes the columns a batch's transitions change:
	// pending_jobs, failed_jobs, failed_job_ids, cancelled_at and
	// finished_at.
	BatchUpdate(ctx context.Context, b *Batch) error
	// BatchList lists batches, newest first.
	BatchList(ctx context.Context, f BatchFilter) ([]*Batch, error)
	// BatchFindForeign returns batches whose last transition has no event
	// row: unfinished batches with a failure and no "catch" row, and
	// batches finished at or after p.Since with no "finally" row (no
	// "cancel" row when cancelled). Those are transitions another engine
	// (Queuety PHP) made. Ids in p.Exclude are skipped.
	BatchFindForeign(ctx context.Context, p ExpiredParams) ([]*Batch, error)
	// BatchJobCounts counts a batch's jobs by queue and status.
	BatchJobCounts(ctx context.Context, batchID int64) ([]QueueCount, error)
	// BatchDeleteFinished deletes up to limit batches that finished before
	// t, with their event rows, and returns how many batches it deleted.
	BatchDeleteFinished(ctx context.Context, before time.Time, limit int) (int64, error)
	// BatchEventInsert inserts event rows. It returns ErrDuplicate when
	// one exists already.
	BatchEventInsert(ctx context.Context, events []*BatchEvent) error
	// BatchEventList returns the event rows of the given batches, by batch
	// and time.
	BatchEventList(ctx context.Context, batchIDs []int64) ([]*BatchEvent, error)
}
