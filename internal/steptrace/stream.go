package steptrace

// This file holds the chunks of a streaming step (Queuety's StreamingStep
// and ChunkStore): the attempt counts the chunks earlier attempts stored,
// writes its own after them, references them all on its completion
// event, and the completed step's chunks are cleared.

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Stream stores c as the attempt's next chunk at once, in its own
// transaction (Queuety's StreamingStep yield and ChunkStore::append_chunk),
// setting its ChunkIndex after those earlier attempts stored, and returns
// how many chunks the job has stored. The trace must not be nil.
func (t *Trace) Stream(ctx context.Context, store driver.Store, c *driver.Chunk) (int, error) {
	if !utf8.ValidString(c.Content) {
		return 0, fmt.Errorf("queuety: stream chunk: %w: chunk content is not valid UTF-8", driver.ErrInvalidArgument)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.loadStream(ctx, store, c.JobID); err != nil {
		return 0, err
	}
	c.ChunkIndex = t.next
	if err := store.InTx(ctx, func(tx driver.Tx) error { return tx.ChunkInsert(ctx, c) }); err != nil {
		return 0, fmt.Errorf("queuety: stream chunk %d of job %d: %w", c.ChunkIndex, c.JobID, err)
	}
	t.next++
	return t.next, nil
}

// Streamed returns the chunks job has stored so far, by index: those of
// earlier attempts that failed or were interrupted, then this attempt's
// (Queuety's $existing_chunks). It marks the attempt as streaming. The
// trace must not be nil.
func (t *Trace) Streamed(ctx context.Context, store driver.Store, job int64) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rows, err := listChunks(ctx, store, job)
	if err != nil {
		return nil, err
	}
	t.streaming = true
	if !t.loaded {
		t.loaded, t.next = true, len(rows)
	}
	out := make([]string, len(rows))
	for i, c := range rows {
		out[i] = c.Content
	}
	return out, nil
}

// loadStream marks the attempt as streaming and, the first time, counts
// the chunks earlier attempts stored; the caller holds t.mu.
func (t *Trace) loadStream(ctx context.Context, store driver.Store, job int64) error {
	t.streaming = true
	if t.loaded {
		return nil
	}
	rows, err := listChunks(ctx, store, job)
	if err != nil {
		return err
	}
	t.loaded, t.next = true, len(rows)
	return nil
}

// listChunks reads the chunks job stored, by index.
func listChunks(ctx context.Context, store driver.Store, job int64) ([]*driver.Chunk, error) {
	var rows []*driver.Chunk
	err := store.InTx(ctx, func(tx driver.Tx) (err error) { rows, err = tx.ChunkList(ctx, job); return err })
	if err != nil {
		return nil, fmt.Errorf("queuety: read chunks of job %d: %w", job, err)
	}
	return rows, nil
}

// ReferenceChunks prepares a successful streaming attempt of step job j
// before its result is recorded: one reference per stored chunk, ahead of
// those the reserved output key listed, as Queuety's worker adds them.
// Queuety reads each reference's chunk_index and content from the chunk's
// text, so both are null in the rows it writes; these rows are written
// the same way. It does so once per attempt, and not for an attempt that
// never streamed.
func (t *Trace) ReferenceChunks(ctx context.Context, store driver.Store, j *driver.Job) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.streaming || t.referenced {
		return nil
	}
	// The job's chunks are those earlier attempts stored, counted when
	// this attempt started streaming, and those it stored since: t.next.
	stored := t.next
	if !t.loaded { // its first read failed; count them now
		rows, err := listChunks(ctx, store, j.ID)
		if err != nil {
			return err
		}
		stored = len(rows)
	}
	refs := make([]any, 0, stored+len(t.chunks))
	for range stored {
		ref := phpjson.NewObject()
		ref.Set("job_id", j.ID)
		ref.Set("workflow_id", j.WorkflowID)
		ref.Set("step_index", int64(*j.StepIndex))
		ref.Set("chunk_index", nil)
		ref.Set("content", nil)
		refs = append(refs, ref)
	}
	t.chunks = append(refs, t.chunks...)
	t.referenced = true // once per attempt; the rows go after the commit
	return nil
}

// EndStream reports whether the attempt streamed, once: the caller then
// clears the job's chunks (ClearChunks) after its completion committed.
func (t *Trace) EndStream() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	streaming := t.streaming
	t.streaming = false
	return streaming
}

// ClearChunks deletes the chunks job stored (Queuety's
// ChunkStore::clear_chunks), in its own transaction.
func ClearChunks(ctx context.Context, store driver.Store, job int64) error {
	return store.InTx(ctx, func(tx driver.Tx) error { _, err := tx.ChunkDeleteJob(ctx, job); return err })
}
