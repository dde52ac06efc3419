package engine

import (
	"context"

	"github.com/queuety/queuety-go/store/driver"
)

// AttemptEngine returns the engine of the attempt running in ctx: the
// state machine runtime applies an entry action's result on its store.
func AttemptEngine(ctx context.Context) (*Engine, bool) {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok || a.hb.e == nil {
		return nil, false
	}
	return a.hb.e, true
}

// AttemptFence returns, for the attempt running in ctx, a check to run
// inside a transaction before writing the attempt's result elsewhere: it
// locks the attempt's job row and returns ErrStaleAttempt when the
// attempt no longer owns it (stale recovery took it back, or a later
// attempt claimed it).
func AttemptFence(ctx context.Context) (func(context.Context, driver.Tx) error, bool) {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok || a.hb.cj == nil {
		return nil, false
	}
	cj := a.hb.cj
	return func(ctx context.Context, tx driver.Tx) error {
		row, err := tx.JobGet(ctx, cj.Job.ID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !cj.owns(row) {
			return ErrStaleAttempt
		}
		return nil
	}, true
}
