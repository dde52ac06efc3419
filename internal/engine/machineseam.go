package engine

import "context"

// AttemptEngine returns the engine of the attempt running in ctx: the
// state machine runtime applies an entry action's result on its store.
func AttemptEngine(ctx context.Context) (*Engine, bool) {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok || a.hb.e == nil {
		return nil, false
	}
	return a.hb.e, true
}
