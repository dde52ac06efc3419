package sweep

import (
	"context"
	"time"

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
	return foreign(ctx, e, "run batch callbacks of batches finished elsewhere", limit, engine.BatchLookback,
		func(now, _ time.Time) []int64 { return e.ForeignBatchSkips(now) },
		driver.Tx.BatchFindForeign, e.SettleForeignBatchLocked)
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
	return foreign(ctx, e, "run compensations and cancel callbacks of workflows ended elsewhere", limit, engine.ForeignEndLookback,
		func(now, _ time.Time) []int64 { return e.ForeignEndSkips(now) },
		driver.Tx.WorkflowFindEndedElsewhere, counted(e.TakeForeignEndLocked))
}
