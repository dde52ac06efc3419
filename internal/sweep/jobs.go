package sweep

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// EnforceTimeouts finds up to limit jobs with an expired activity deadline
// through the deadline indexes (a plain read, so its cost grows with the
// expired rows, not with the table) and enforces each under its own lock
// (engine.EnforceTimeout). It returns how many timeouts it applied and
// whether a full batch of candidates was found. Concurrent enforcers may
// examine the same candidates; the lock and re-check let only one of them
// act.
func EnforceTimeouts(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	var ids []int64
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		jobs, err := tx.JobFindTimedOut(ctx, driver.TimedOutParams{Now: e.Clock().Now(), Limit: limit, Lock: driver.LockNone})
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: find timed-out jobs: %w", err)
	}
	n := 0
	for _, id := range ids {
		acted, err := e.EnforceTimeout(ctx, id)
		if err != nil {
			return n, false, err
		}
		if acted {
			n++
		}
	}
	return n, len(ids) >= limit, nil
}

// RecoverStale takes back up to limit jobs whose claim has not been
// renewed within the stale timeout, and processing jobs with no claim time
// (reserved_at NULL), which nothing would ever renew: each is retried or,
// when its attempts are used up, buried, failing its workflow
// (engine.RecoverStaleLocked). Rows are claimed with SKIP LOCKED and
// changed under their lock, so any number of concurrent sweepers recover
// each job once. It returns how many jobs it recovered and whether a full
// batch was found.
func RecoverStale(ctx context.Context, e *engine.Engine, limit int) (int, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	var n int
	var more bool
	err := staleTx(ctx, e, "stale jobs", func(ctx context.Context, tx driver.Tx, fail *engine.StaleFailures) error {
		reservedBefore, leaseBefore := e.StaleCutoffs(e.Clock().Now())
		rows, err := tx.JobFindStale(ctx, driver.StaleParams{ReservedBefore: reservedBefore,
			LeaseBefore: leaseBefore, Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		n, more = len(rows), len(rows) >= limit
		return e.RecoverStaleLocked(ctx, tx, rows, fail)
	})
	if err != nil {
		return 0, false, err
	}
	return n, more, nil
}

// staleTx runs recover in one transaction under a job note (the jobs it
// makes due again at once, the group slots it frees) with the failures of
// the jobs it buries, which fail their workflows once it has committed:
// the frame of stale recovery, of normal claims and of held ones.
func staleTx(ctx context.Context, e *engine.Engine, what string, recover func(ctx context.Context, tx driver.Tx, fail *engine.StaleFailures) error) error {
	var fail engine.StaleFailures
	ctx, woke := e.NoteJobs(ctx)
	defer woke()
	err := e.Store().InTx(ctx, func(tx driver.Tx) error {
		fail = engine.StaleFailures{}
		return recover(ctx, tx, &fail)
	})
	if err != nil {
		return fmt.Errorf("queuety: recover %s: %w", what, err)
	}
	e.FailStaleWorkflows(ctx, fail)
	return nil
}
