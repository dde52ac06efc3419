package sweep

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// ExpireWorkflows expires up to limit workflows past a deadline. Candidates
// are read through the deadline indexes with SKIP LOCKED and expired under
// their lock (engine.ExpireLocked), so concurrent sweepers split the work
// and each workflow is expired (and its callback enqueued) once. It
// returns how many it expired and whether a full batch was found (more may
// be waiting).
//
// Workflows this process leaves to a worker that has their deadline
// handler (see internal/engine/handoff.go) are added to *left and skipped
// by later batches of the same sweep; left may be nil.
func ExpireWorkflows(ctx context.Context, e *engine.Engine, limit int, left *[]int64) (int, bool, error) {
	if left == nil {
		left = new([]int64)
	}
	find := func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]*driver.Workflow, error) {
		p.Exclude = *left
		return tx.WorkflowFindExpired(ctx, p)
	}
	return batch(ctx, e, "expire workflows", limit, find,
		func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (int, bool, error) {
			expired, leave, err := e.ExpireLocked(ctx, tx, wf, now)
			if leave {
				*left = append(*left, wf.ID)
			}
			if expired {
				return 1, true, err
			}
			return 0, true, err
		})
}

// ForeignExpiries finds up to limit workflows that another engine
// (Queuety PHP's sweep) failed at their deadline without running their
// deadline handler, because the handler is one this process's workers
// registered, and hands each, under its row lock, to
// engine.TakeForeignExpiryLocked, which records the timeout failure and
// enqueues the handler once. Without workers it does nothing. It returns
// how many handlers it enqueued and whether a full batch was found.
func ForeignExpiries(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	if !e.HasWorkers() {
		return 0, false, nil
	}
	return foreign(ctx, e, "run deadline handlers of workflows expired elsewhere", limit, engine.ForeignExpiryLookback,
		func(_, since time.Time) []int64 { return e.ForeignExpirySkips(since) },
		driver.Tx.WorkflowFindDeadlineFailed, counted(e.TakeForeignExpiryLocked))
}

// FireWaitTimeouts settles up to limit signal waits whose timeout has
// passed: the workflow continues with TimedOutKey(...) = true
// (engine.TimeOutWaitLocked). Candidates are read with SKIP LOCKED and
// re-checked under the row lock, which a competing Signal also takes, so
// exactly one of the signal and the timer wins. It returns how many waits
// it timed out and whether a full batch was found.
func FireWaitTimeouts(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	return batch(ctx, e, "fire wait timeouts", limit, driver.Tx.WorkflowFindWaitExpired,
		func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (int, bool, error) {
			fired, err := e.TimeOutWaitLocked(ctx, tx, wf, now)
			if err != nil {
				return 0, false, err
			}
			if fired {
				return 1, true, nil
			}
			return 0, true, nil
		})
}
