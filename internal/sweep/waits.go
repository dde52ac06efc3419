package sweep

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// waitRecoveryGrace is how long ago a dependency must have ended for the
// stranded-wait sweep to take its wait as missed.
const waitRecoveryGrace = 5 * time.Second

// RecoverWaits re-evaluates up to limit workflow waits whose dependencies
// ended without seeing them (driver.WaitRecoveryTx): Queuety PHP sets up
// a wait reading the workflows it waits for without row locks, so a
// dependency that ends meanwhile, in either engine, can find no wait to
// wake, and the wait commits as pending. Candidates are read with SKIP
// LOCKED and re-evaluated under their row lock
// (engine.RecoverWaitLocked), as a dependency's end does: the wait
// settles, fails, or keeps waiting. A store without the finder has no such
// sweep: it does nothing. It returns how many waits settled or failed and
// whether a full batch was found.
//
// Only dependencies that ended at least waitRecoveryGrace ago count, so
// that the sweep leaves a wait alone while the end of a dependency is
// still re-evaluating it: Queuety PHP does that in a transaction of its
// own after the end commits.
//
// Waits that keep waiting (a dependency failed but the others may still
// satisfy it) are added to *left and skipped by later batches of the same
// sweep; left may be nil.
func RecoverWaits(ctx context.Context, e *engine.Engine, limit int, left *[]int64) (int, bool, error) {
	if left == nil {
		left = new([]int64)
	}
	find := func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
		f, ok := tx.(driver.WaitRecoveryTx)
		if !ok {
			return nil, nil
		}
		p.Now, p.Exclude = p.Now.Add(-waitRecoveryGrace), *left
		return f.WorkflowFindStrandedWaits(ctx, p)
	}
	return batch(ctx, e, "recover workflow waits", limit, find,
		func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (int, bool, error) {
			decided, err := e.RecoverWaitLocked(ctx, tx, wf, now)
			if err != nil {
				return 0, false, err
			}
			if !decided {
				*left = append(*left, wf.ID)
				return 0, true, nil
			}
			return 1, true, nil
		})
}
