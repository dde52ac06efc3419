package engine

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

// Backlog counts the jobs a claim by a worker with these queues and
// handlers would find due now, up to limit, without locking anything (a
// worker with adaptive concurrency sizes itself by it, as Queuety PHP's
// adaptive pool sizes itself by its claimable pending count).
func (e *Engine) Backlog(ctx context.Context, queues, handlers []string, limit int) (int, error) {
	if limit <= 0 || len(handlers) == 0 {
		return 0, nil
	}
	var n int
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		n = 0
		now := e.clock.Now()
		for _, q := range queues {
			ids, err := tx.JobClaimCandidates(ctx, driver.ClaimParams{Queue: q, Handlers: handlers, Limit: limit - n, Now: now})
			if err != nil {
				return err
			}
			if n += len(ids); n >= limit {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: count due jobs: %w", err)
	}
	return n, nil
}
