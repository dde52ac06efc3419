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
	ctx, woke := e.NoteJobs(ctx) // the jobs a sweep's changes make claimable (a resumed workflow's next step)
	defer woke()
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

// foreign is the body of the sweeps over rows another engine (Queuety
// PHP) left for Go: in one transaction, find up to limit candidates that
// changed within lookback before now, past the ones exclude names (those
// this process left to another worker lately), and hand each to take
// under its row lock. It reports how many rows take changed and whether a
// full batch was found.
func foreign[T any](ctx context.Context, e *engine.Engine, what string, limit int, lookback time.Duration,
	exclude func(now, since time.Time) []int64,
	find func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]T, error),
	take func(ctx context.Context, tx driver.Tx, row T, now time.Time) (int, error),
) (int, bool, error) {
	var n int
	var more bool
	ctx, woke := e.NoteJobs(ctx) // the jobs its changes make claimable (callback jobs)
	defer woke()
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		n, more = 0, false
		now := e.Clock().Now()
		since := now.Add(-lookback)
		rows, err := find(tx, ctx, driver.ExpiredParams{Now: now, Since: since, Limit: limit,
			Lock: driver.LockSkipLocked, Exclude: exclude(now, since)})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		for _, row := range rows {
			c, err := take(ctx, tx, row, now)
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: %s: %w", what, err)
	}
	return n, more, nil
}

// counted turns a transition that reports whether it acted into one that
// reports how many rows it changed.
func counted[T any](take func(ctx context.Context, tx driver.Tx, row T, now time.Time) (bool, error)) func(context.Context, driver.Tx, T, time.Time) (int, error) {
	return func(ctx context.Context, tx driver.Tx, row T, now time.Time) (int, error) {
		ok, err := take(ctx, tx, row, now)
		if ok {
			return 1, err
		}
		return 0, err
	}
}
