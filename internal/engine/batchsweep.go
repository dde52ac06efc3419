package engine

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/store/driver"
)

// BatchLookback is how far back in finished_at the foreign batch sweep
// (internal/sweep) looks for batches another engine finished.
const BatchLookback = batch.Lookback

// HasBatchWorkers reports whether a worker of this process registered
// batch callbacks; without one the foreign batch sweep has nothing to do.
func (e *Engine) HasBatchWorkers() bool { return e.hasBatchWorkers() }

// SettleForeignBatchLocked enqueues, under the row lock the caller took,
// the Go batch callbacks this process's workers registered for b, a batch
// whose last transition (a first failure, the end, a cancel) another
// engine made, Queuety PHP's workers (package internal/batch). Queuety PHP
// skips a callback that is not a PHP class, so this is how a Go callback
// of a batch PHP workers finished runs. Callbacks this process does not
// have are left to the worker that has them, PHP or Go, for the deadline
// handoff period after the batch finished, then recorded as left. It
// returns how many callbacks it enqueued.
func (e *Engine) SettleForeignBatchLocked(ctx context.Context, tx driver.Tx, b *driver.Batch, now time.Time) (int, error) {
	return e.batches.SettleForeign(ctx, tx, b, now)
}

// ForeignBatchSkips returns the batches the foreign batch sweep moves
// past: those it left to another worker within the last handoff period.
func (e *Engine) ForeignBatchSkips(now time.Time) []int64 { return e.batches.Skips(now) }

// batchHandoff is how long after a batch finished a Go worker leaves a
// callback it does not have to the worker that has it.
func (e *Engine) batchHandoff() time.Duration {
	if e.cfg.DeadlineHandoff > 0 {
		return e.cfg.DeadlineHandoff
	}
	return DefaultDeadlineHandoff
}
