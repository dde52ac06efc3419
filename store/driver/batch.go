package driver

import (
	"context"
	"time"
)

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
