package operate

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// workflowPurgeBatch is how many workflows one purge transaction deletes
// with their rows.
const workflowPurgeBatch = 100

// PruneWorkflowEvents deletes workflow events created more than olderThan
// ago (Queuety's WorkflowEventLog::prune), in batches, and returns how
// many it deleted. Rewinding to a step whose events are gone fails, and
// the timeline and trace show what is left.
func (e *Service) PruneWorkflowEvents(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("workflow event prune age must not be negative")
	}
	before := e.cfg.Clock.Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		err := e.store.InTx(ctx, func(tx driver.Tx) (err error) {
			n, err = tx.EventDeleteBefore(ctx, before, purgeBatch)
			return err
		})
		if err != nil {
			return total, wrap("prune workflow events", err)
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}

// PurgeWorkflows deletes the workflows that finished (completed, failed
// or cancelled) more than olderThan ago, with their jobs, events, chunks,
// artifacts, signals, the dependencies they waited on, dispatch keys and
// the Go engine's failure and end rows; log rows stay for PurgeLogs. It
// works in batches of 100 workflows, each in its own transaction, oldest
// id first, and returns how many workflows it deleted. Queuety PHP's
// purge_completed deletes completed workflow rows alone.
func (e *Service) PurgeWorkflows(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("workflow purge age must not be negative")
	}
	before := e.cfg.Clock.Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		var found int
		err := e.store.InTx(ctx, func(tx driver.Tx) error {
			ids, err := tx.WorkflowFinishedBefore(ctx, before, workflowPurgeBatch)
			if err != nil {
				return err
			}
			found = len(ids)
			n, err = tx.WorkflowDeleteWithRows(ctx, ids)
			return err
		})
		if err != nil {
			return total, wrap("purge workflows", err)
		}
		total += n
		if found < workflowPurgeBatch {
			return total, nil
		}
	}
}
