package sweep

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// ForeignBatches finds up to limit batches whose last transition (a first
// failure, the end, a cancel) another engine made, Queuety PHP's workers,
// and enqueues, under each batch's row lock, the Go batch callbacks this
// process's workers registered for it (engine.SettleForeignBatchLocked),
// once however many Go workers sweep. Without workers that registered
// batch callbacks it does nothing. It returns how many callbacks it
// enqueued and whether a full batch of candidates was found.
func ForeignBatches(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	if !e.HasBatchWorkers() {
		return 0, false, nil
	}
	var n int
	var more bool
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.Clock().Now()
		rows, err := tx.BatchFindForeign(ctx, driver.ExpiredParams{Now: now, Since: now.Add(-engine.BatchLookback), Limit: limit,
			Lock: driver.LockSkipLocked, Exclude: e.ForeignBatchSkips(now)})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		for _, b := range rows {
			c, err := e.SettleForeignBatchLocked(ctx, tx, b, now)
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

// ForeignEnds finds up to limit workflows that another engine (Queuety
// PHP) failed or cancelled within engine.ForeignEndLookback and hands each,
// under its row lock, to engine.TakeForeignEndLocked, which enqueues one
// job for Queuety PHP's bridge class when the workflow names compensation
// or cancel handlers, once (see internal/engine/foreignends.go). It needs
// a PHP workflow callback queue, since only Queuety PHP knows which names
// it ran, and does nothing without one. It returns how many workflows it
// handed to the bridge and whether a full batch was found.
func ForeignEnds(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	if e.PHPWorkflowCallbacks() == "" {
		return 0, false, nil
	}
	var n int
	var more bool
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.Clock().Now()
		since := now.Add(-engine.ForeignEndLookback)
		rows, err := tx.WorkflowFindEndedElsewhere(ctx, driver.ExpiredParams{Now: now, Since: since, Limit: limit,
			Lock: driver.LockSkipLocked, Exclude: e.ForeignEndSkips(now)})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		for _, wf := range rows {
			started, err := e.TakeForeignEndLocked(ctx, tx, wf, now)
			if err != nil {
				return err
			}
			if started {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: run compensations and cancel callbacks of workflows ended elsewhere: %w", err)
	}
	return n, more, nil
}
