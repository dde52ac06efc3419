package sqlstore

// This file holds streaming steps' chunks and the retention deletes of
// workflow history (events, finished workflows with their rows).

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

const chunkCols = "id, job_id, workflow_id, step_index, chunk_index, content, created_at"

func scanChunk(sc scanner) (*driver.Chunk, error) {
	c := &driver.Chunk{}
	var wf *int64
	err := sc.Scan(&c.ID, &c.JobID, &wf, nullIntPtr{&c.StepIndex}, &c.ChunkIndex, &c.Content, nullTime{&c.CreatedAt})
	if err != nil {
		return nil, fmt.Errorf("scan chunk: %w", err)
	}
	if wf != nil {
		c.WorkflowID = *wf
	}
	return c, nil
}

// ChunkInsert implements driver.Tx with the columns Queuety's
// ChunkStore::append_chunk writes.
func (t *txn) ChunkInsert(ctx context.Context, c *driver.Chunk) error {
	ids, err := t.insert(ctx, "INSERT INTO "+t.s.T.Chunks+
		" (job_id, workflow_id, step_index, chunk_index, content, created_at) VALUES ("+placeholders(6)+")", 1,
		c.JobID, nullID(c.WorkflowID), nullIntp(c.StepIndex), c.ChunkIndex, c.Content, t.sec(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert chunk %d of job %d: %w", c.ChunkIndex, c.JobID, err)
	}
	c.ID = ids[0]
	return nil
}

// ChunkList implements driver.Tx.
func (t *txn) ChunkList(ctx context.Context, jobID int64) ([]*driver.Chunk, error) {
	out, err := queryAll(ctx, t.tx, scanChunk, "SELECT "+chunkCols+" FROM "+t.s.T.Chunks+
		" WHERE job_id = ? ORDER BY chunk_index, id", jobID)
	if err != nil {
		return nil, fmt.Errorf("list chunks of job %d: %w", jobID, err)
	}
	return out, nil
}

// ChunkListWorkflow implements driver.Tx.
func (t *txn) ChunkListWorkflow(ctx context.Context, workflowID, afterID int64, limit int) ([]*driver.Chunk, error) {
	out, err := queryAll(ctx, t.tx, scanChunk, "SELECT "+chunkCols+" FROM "+t.s.T.Chunks+
		" WHERE workflow_id = ? AND id > ? ORDER BY step_index, chunk_index, id LIMIT ?", workflowID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list chunks of workflow %d: %w", workflowID, err)
	}
	return out, nil
}

// ChunkDeleteJob implements driver.Tx (Queuety's ChunkStore::clear_chunks).
func (t *txn) ChunkDeleteJob(ctx context.Context, jobID int64) (int64, error) {
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Chunks+" WHERE job_id = ?", jobID)
	if err != nil {
		return 0, fmt.Errorf("delete chunks of job %d: %w", jobID, err)
	}
	return res.RowsAffected()
}

// EventDeleteBefore implements driver.Tx. The rows go in id order.
func (t *txn) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	q := "DELETE FROM " + t.s.T.Events + " WHERE id IN (SELECT id FROM (SELECT id FROM " + t.s.T.Events +
		" WHERE created_at < ? ORDER BY id LIMIT ?) AS old)"
	res, err := t.tx.ExecContext(ctx, q, t.sec(before), limit)
	if err != nil {
		return 0, fmt.Errorf("prune workflow events: %w", err)
	}
	return res.RowsAffected()
}

// WorkflowFinishedBefore implements driver.Tx.
func (t *txn) WorkflowFinishedBefore(ctx context.Context, before time.Time, limit int) ([]int64, error) {
	q := "SELECT id FROM " + t.s.T.Workflows + " WHERE status IN ('completed', 'failed', 'cancelled')" +
		" AND COALESCE(completed_at, failed_at) < ? ORDER BY id LIMIT ?" + t.lock(driver.LockUpdate)
	ids, err := queryAll(ctx, t.tx, func(sc scanner) (id int64, err error) { return id, sc.Scan(&id) }, q, t.sec(before), limit)
	if err != nil {
		return nil, fmt.Errorf("find finished workflows: %w", err)
	}
	return ids, nil
}

// WorkflowDeleteWithRows implements driver.Tx.
func (t *txn) WorkflowDeleteWithRows(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	in := " IN (" + placeholders(len(ids)) + ")"
	args := idArgs(ids)
	T := t.s.T
	for _, d := range []struct{ table, col string }{
		{T.Chunks, "workflow_id"}, {T.Events, "workflow_id"}, {T.Artifacts, "workflow_id"}, {T.Signals, "workflow_id"},
		{T.Dependencies, "waiting_workflow_id"}, {T.DispatchKeys, "workflow_id"}, {T.Failures, "workflow_id"},
		{T.WorkflowEnds, "workflow_id"}, {T.Jobs, "workflow_id"},
	} {
		if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+d.table+" WHERE "+d.col+in, args...); err != nil {
			return 0, fmt.Errorf("purge workflows: delete from %s: %w", d.table, err)
		}
	}
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+T.Workflows+" WHERE id"+in, args...)
	if err != nil {
		return 0, fmt.Errorf("purge workflows: %w", err)
	}
	return res.RowsAffected()
}
