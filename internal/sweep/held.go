package sweep

import (
	"context"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// RecoverHeld counts the attempts of held transactions whose processes
// died (engine.RecoverHeldLocked) from up to limit expired journal rows,
// in one transaction. It returns how many jobs it took back and whether a
// full batch of rows was deleted (a row kept for a locked job is read
// again by the next sweep, not by this one). Stores that cannot hold claims have no
// journal: it does nothing there.
func RecoverHeld(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	if !e.CanHold() {
		return 0, false, nil
	}
	if limit <= 0 {
		limit = 100
	}
	var n, rows int
	err := staleTx(ctx, e, "held claims of dead processes", func(ctx context.Context, tx driver.Tx, fail *engine.StaleFailures) error {
		var err error
		n, rows, err = e.RecoverHeldLocked(ctx, tx, limit, fail)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return n, rows >= limit, nil
}
