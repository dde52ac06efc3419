package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/store/driver"
)

// The RateLimited middleware counts the executions it admitted, per
// handler, in the Go engine's rate-start table under the key below, and
// the executions of Queuety PHP workers by their 'started' log rows (the
// rows no recorded start names). Admitting an execution locks the key's
// limit row first, so two workers never both take the last slot.

// rateLimitedKey is the rate-start key of handler's RateLimited slots.
func rateLimitedKey(handler string) string { return "rate_limited:" + handler }

// RateSlot takes one of the execution slots of handler's RateLimited
// middleware (limit of them) in the window ending now, for the attempt of job jobID.
// It reports whether it took one; when not, wait is how long until the
// oldest counted execution leaves the window (at least a second).
func (e *Engine) RateSlot(ctx context.Context, handler string, jobID int64, attempt, limit int, window time.Duration) (ok bool, wait time.Duration, err error) {
	if limit < 1 || window <= 0 {
		return false, 0, invalidf("rate limit must allow at least 1 execution in a positive window, got %d per %s", limit, window)
	}
	key := rateLimitedKey(handler)
	if err := checkLockKey(key); err != nil {
		return false, 0, err
	}
	rate := admission.Rate{Max: limit, Window: window}
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		ok, wait = false, 0
		now := e.clock.Now()
		if err := tx.LimitLock(ctx, driver.LimitRate, key, now); err != nil {
			return err
		}
		if _, err := tx.RateStartDelete(ctx, key, now.Add(-window-time.Second), 1000); err != nil {
			return err
		}
		foreign, err := admission.ForeignStarts(ctx, tx, handler, rate, now)
		if err != nil {
			return err
		}
		free, next, err := admission.Budget(ctx, tx, key, foreign, rate, now)
		if err != nil {
			return err
		}
		if free > 0 {
			ok = true
			return tx.RateStartInsert(ctx, []driver.RateStart{{Handler: key, JobID: jobID, Attempt: attempt, StartedAt: now}})
		}
		wait = max(next.Sub(now), time.Second)
		return nil
	})
	if err != nil {
		return false, 0, fmt.Errorf("queuety: take a rate slot of %q: %w", handler, err)
	}
	return ok, wait, nil
}
