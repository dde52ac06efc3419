package engine

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/store/driver"
)

// This file wires the engine to package batch, which holds the batches'
// and chains' rows, transitions and callbacks. The engine keeps what is
// its own: turning job requests into rows (dispatch rules), knowing which
// worker of this process runs a callback (workers.go), and calling the
// batch transitions from the transactions that complete and bury jobs.

// Batches returns the engine's batches and chains (package batch).
func (e *Engine) Batches() *batch.Service { return e.batches }

// newBatches builds the batches of e's store, with what they need to know
// of the engine.
func (e *Engine) newBatches() *batch.Service {
	return batch.New(e.store, batch.Config{
		Clock: e.clock, Logger: e.log, KnownCallback: e.knowsBatch, PHPCallbacks: e.cfg.PHPBatchCallbacks,
		BridgeRuntime: callbackRuntime, CallbackAttempts: callbackAttempts, Handoff: e.batchHandoff(),
	})
}

// knowsBatch reports whether a worker of this process runs the callback,
// and the queue that worker polls.
func (e *Engine) knowsBatch(name string) (queue string, known bool) {
	h, _ := e.findWorker(func(w *WorkerHandlers) bool { return w.BatchCallback != nil && w.BatchCallback(name) })
	if h == nil {
		return "", false
	}
	return orDefault(h.Queue, DefaultQueue), true
}

// hasBatchWorkers reports whether this process has workers at all.
func (e *Engine) hasBatchWorkers() bool {
	_, anyWorker := e.findWorker(func(*WorkerHandlers) bool { return false })
	return anyWorker
}

// CancelBatch cancels a batch as BatchManager::cancel does (see
// batch.Service.Cancel), and wakes idle workers for the finally callback
// job it enqueues.
func (e *Engine) CancelBatch(ctx context.Context, id int64) (bool, error) {
	ctx, woke := e.noteJobs(ctx)
	done, err := e.batches.Cancel(ctx, id)
	if err == nil {
		woke()
	}
	return done, err
}

// batchJobsCompleted records completed plain jobs on their batches, in
// the transaction that completed them.
func (e *Engine) batchJobsCompleted(ctx context.Context, tx driver.Tx, results []*Result, now time.Time) error {
	jobs := make([]*driver.Job, len(results))
	for i, r := range results {
		jobs[i] = r.Claimed.Job
	}
	return e.batches.JobsCompleted(ctx, tx, jobs, now)
}

// jobBuried runs what the burial of a plain job sets off, in the
// transaction that buried it: its batch records the failure, and its
// chain's catch handler is enqueued.
func (e *Engine) jobBuried(ctx context.Context, tx driver.Tx, cj *Claimed, row *driver.Job, msg string, now time.Time) error {
	if row.WorkflowID != 0 {
		return nil
	}
	return e.batches.JobBuried(ctx, tx, row, cjWithPayload(cj, row).payload, msg, now)
}
