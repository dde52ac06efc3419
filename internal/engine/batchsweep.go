package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/store/driver"
)

// RunForeignBatchCallbacks finds up to limit batches whose last transition
// (a first failure, the end, a cancel) another engine made, Queuety PHP's
// workers, and enqueues the Go batch callbacks this process's workers
// registered for them, under the batch's row lock, once however many Go
// workers sweep (package batch). Queuety PHP skips a callback that is not a
// PHP class, so this is how a Go callback of a batch PHP workers finished
// runs. Callbacks this process does not have are left to the worker that
// has them, PHP or Go, for the deadline handoff period after the batch
// finished, then recorded as left. It returns how many callbacks it
// enqueued and whether a full batch of candidates was found.
func (e *Engine) RunForeignBatchCallbacks(ctx context.Context, limit int) (int, bool, error) {
	if !e.hasBatchWorkers() {
		return 0, false, nil
	}
	var n int
	var more bool
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.clock.Now()
		rows, err := tx.BatchFindForeign(ctx, driver.ExpiredParams{Now: now, Since: now.Add(-batch.Lookback), Limit: limit,
			Lock: driver.LockSkipLocked, Exclude: e.batches.Skips(now)})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		for _, b := range rows {
			c, err := e.batches.SettleForeign(ctx, tx, b, now)
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: run batch callbacks of batches finished elsewhere: %w", err)
	}
	return n, more, nil
}

// batchHandoff is how long after a batch finished a Go worker leaves a
// callback it does not have to the worker that has it.
func (e *Engine) batchHandoff() time.Duration {
	if e.cfg.DeadlineHandoff > 0 {
		return e.cfg.DeadlineHandoff
	}
	return DefaultDeadlineHandoff
}
