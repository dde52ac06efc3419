package driver

import (
	"context"
	"time"
)

// Chunk is one row of Queuety's chunks table: a piece of a streaming
// step's output, written as soon as the step produced it.
type Chunk struct {
	ID         int64
	JobID      int64
	WorkflowID int64 // 0 for SQL NULL
	StepIndex  *int  // nil for SQL NULL
	ChunkIndex int   // zero-based, per job
	Content    string
	CreatedAt  time.Time
}

// RetentionTx holds the chunk rows of streaming steps and the deletes that
// keep the history tables bounded.
type RetentionTx interface {
	// ChunkInsert stores c and sets its ID.
	ChunkInsert(ctx context.Context, c *Chunk) error
	// ChunkList returns a job's chunks by chunk index (then id).
	ChunkList(ctx context.Context, jobID int64) ([]*Chunk, error)
	// ChunkListWorkflow returns up to limit chunks of a workflow by step
	// index, chunk index and id, after the chunk with id afterID.
	ChunkListWorkflow(ctx context.Context, workflowID int64, afterID int64, limit int) ([]*Chunk, error)
	// ChunkDeleteJob deletes a job's chunks and returns how many it deleted.
	ChunkDeleteJob(ctx context.Context, jobID int64) (int64, error)

	// EventDeleteBefore deletes up to limit workflow events created before
	// before, oldest id first, and returns how many it deleted.
	EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int64, error)
	// WorkflowFinishedBefore returns up to limit ids of workflows that are
	// completed, failed or cancelled and finished (completed_at, else
	// failed_at) before before, in id order, locked for update.
	WorkflowFinishedBefore(ctx context.Context, before time.Time, limit int) ([]int64, error)
	// WorkflowDeleteWithRows deletes the workflows and every row that
	// belongs to them: jobs, events, chunks, artifacts, signals,
	// the dependencies it waited on, dispatch keys, the Go engine's failures
	// and workflow ends. Log rows stay (they have their own purge). It
	// returns how many workflows it deleted.
	WorkflowDeleteWithRows(ctx context.Context, ids []int64) (int64, error)

	// JobRetirable returns up to p.Limit ids of jobs in status that
	// finished before p.Before (completed_at for completed jobs, failed_at
	// for the others), oldest first, leaving out the steps of workflows
	// that have not finished and the jobs an unfinished job depends on
	// (depends_on). It reads without locks.
	JobRetirable(ctx context.Context, status JobStatus, p RetireParams) ([]int64, error)
	// JobDeleteRetired deletes the jobs among ids that are still in status
	// and finished before before, and returns how many it deleted.
	JobDeleteRetired(ctx context.Context, ids []int64, status JobStatus, before time.Time) (int64, error)
	// WorkflowRetirable returns up to p.Limit ids of workflows that are
	// completed, failed or cancelled and finished (completed_at, else
	// failed_at) before p.Before, oldest first, leaving out the children
	// of unfinished parents and the workflows an unfinished workflow waits
	// on (workflow_dependencies). It reads without locks.
	WorkflowRetirable(ctx context.Context, p RetireParams) ([]int64, error)
	// LogDeleteRetired deletes up to limit log rows created before before,
	// oldest first, and returns how many it deleted.
	LogDeleteRetired(ctx context.Context, before time.Time, limit int) (int64, error)
}

// RetireParams selects the rows a retention pass may delete.
type RetireParams struct {
	Before time.Time
	Limit  int
	// Only limits the search to these ids (a check again under row
	// locks); nil searches every row.
	Only []int64
}
