package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// batch is the body the indexed sweeps share: in one transaction, find up
// to limit candidates with find (a Tx method expression that reads with
// SKIP LOCKED, so concurrent sweepers take disjoint rows), apply each one,
// and report how many rows changed and whether a full batch was found, in
// which case the caller sweeps again. apply reports per candidate how many
// rows it changed and whether it made progress; a full batch whose
// candidates made no progress ends the sweep, so rows that stay due cannot
// spin it.
func batch[T any](ctx context.Context, e *engine.Engine, what string, limit int,
	find func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]T, error),
	apply func(ctx context.Context, tx driver.Tx, row T, now time.Time) (changed int, progressed bool, err error),
) (int, bool, error) {
	var n int
	var more bool
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.Clock().Now()
		rows, err := find(tx, ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		progressed := false
		for _, row := range rows {
			c, p, err := apply(ctx, tx, row, now)
			if err != nil {
				return err
			}
			n, progressed = n+c, progressed || p
		}
		more = len(rows) >= limit && progressed
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: %s: %w", what, err)
	}
	return n, more, nil
}
