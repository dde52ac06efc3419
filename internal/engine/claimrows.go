package engine

// This file finds the row that makes a claim fail. A claim takes a batch
// of rows in one transaction; when the values of one row make it fail (a
// value out of its column's range, one a trigger or CHECK constraint
// refuses, one the store cannot read), every claim of that queue fails
// the same way, and a worker claims for all its queues at once. Retrying
// cannot help, so the engine narrows the failure down: it lists the ids
// the claim would take, claims halves of them in transactions it rolls
// back, and buries each row that fails alone with an error that says so.

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

// maxIsolationRounds bounds how often one claim searches for unclaimable
// rows and claims again; a claim that still fails returns its error, and
// the worker's next claim searches again.
const maxIsolationRounds = 3

// minIsolationCandidates is the fewest candidate ids a search examines per
// queue: a claim with limits may skip rows an unfiltered read returns
// first.
const minIsolationCandidates = 100

// errProbeDone ends a probe's transaction: a probe claims only to learn
// whether the claim fails, and rolls back.
var errProbeDone = errors.New("queuety: probe claim succeeded")

// buryUnclaimable searches the candidates of req's queues for rows whose
// values make a claim fail and buries them. It returns how many it buried.
func (e *Engine) buryUnclaimable(ctx context.Context, req ClaimRequest) (int, error) {
	buried := 0
	for _, q := range req.Queues {
		var ids []int64
		err := e.store.InTx(ctx, func(tx driver.Tx) error {
			var err error
			ids, err = tx.JobClaimCandidates(ctx, driver.ClaimParams{Queue: q, Handlers: req.Handlers,
				Limit: max(req.Limit, minIsolationCandidates), Now: e.clock.Now()})
			return err
		})
		if err != nil {
			return buried, fmt.Errorf("list claim candidates of queue %q: %w", q, err)
		}
		bad, err := e.unclaimableRows(ctx, req.Handlers, q, ids)
		if err != nil {
			return buried, fmt.Errorf("queue %q: %w", q, err)
		}
		for _, b := range bad {
			ok, err := e.buryUnclaimableRow(ctx, q, b.id, b.cause)
			if err != nil {
				return buried, err
			}
			if ok {
				buried++
			}
		}
	}
	return buried, nil
}

// badRow is a job whose claim fails on its own, and why.
type badRow struct {
	id    int64
	cause error
}

// unclaimableRows returns the rows among ids that a claim fails on alone.
// A failure that is not about a row's values ends the search with that
// error, and so does every row failing: then the cause lies elsewhere
// (the schema, a trigger that refuses every claim), and burying the rows
// would only hide it.
func (e *Engine) unclaimableRows(ctx context.Context, handlers []string, queue string, ids []int64) ([]badRow, error) {
	var bad []badRow
	var search func(ids []int64) error
	search = func(ids []int64) error {
		err := e.probeClaim(ctx, handlers, queue, ids)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, driver.ErrRowData):
			return err
		case len(ids) == 1:
			bad = append(bad, badRow{ids[0], err})
			return nil
		}
		half := len(ids) / 2
		if err := search(ids[:half]); err != nil {
			return err
		}
		return search(ids[half:])
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if err := search(ids); err != nil {
		return nil, err
	}
	if len(bad) > 1 && len(bad) == len(ids) {
		return nil, fmt.Errorf("every one of %d candidate rows fails a claim, so the cause is not in a row: %w", len(ids), bad[0].cause)
	}
	return bad, nil
}

// probeClaim claims the jobs ids of queue in a transaction it rolls back,
// and returns the claim's error.
func (e *Engine) probeClaim(ctx context.Context, handlers []string, queue string, ids []int64) error {
	req := ClaimRequest{Queues: []string{queue}, Handlers: handlers, Limit: len(ids), ids: ids}
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		if _, _, _, err := e.claimIn(ctx, tx, req); err != nil {
			return err
		}
		return errProbeDone
	})
	if errors.Is(err, errProbeDone) {
		return nil
	}
	return err
}

// buryUnclaimableRow buries a pending job no claim can take, writing only
// the columns a burial needs, and logs it; a workflow step fails its
// workflow. It reports whether the job was still pending.
func (e *Engine) buryUnclaimableRow(ctx context.Context, queue string, id int64, cause error) (bool, error) {
	msg := fmt.Sprintf("Job %d cannot be claimed: a value in its row makes every claim fail (%v). "+
		"It was buried so that the other jobs of its queue can run; correct the row, then retry the job.", id, cause)
	var buried bool
	var wf *wfFailure
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		buried, wf = false, nil
		now := e.clock.Now()
		ok, err := tx.JobBuryUnclaimable(ctx, id, msg, now)
		if err != nil || !ok {
			return err
		}
		buried = true
		entry := &driver.LogEntry{JobID: ptr(id), Queue: queue, Event: driver.LogBuried, ErrorMessage: msg, CreatedAt: now}
		fail := &driver.Failure{JobID: id, Category: driver.FailureInternal, NonRetryable: true, Message: msg, CreatedAt: now}
		// The row may be readable (a value the database refuses to
		// update is not one Go fails to read): then the log row names its
		// handler and workflow, and a batch or chain learns of the burial.
		row, rerr := tx.JobGet(ctx, id, driver.LockNone)
		if rerr == nil {
			entry.Handler, entry.Attempt = row.Handler, ptr(row.Attempts)
			fail.Attempt, fail.StepIndex = row.Attempts, row.StepIndex
			if row.WorkflowID != 0 && row.StepIndex != nil {
				entry.WorkflowID, entry.StepIndex = row.WorkflowID, ptr(*row.StepIndex)
				fail.WorkflowID = row.WorkflowID
				wf = &wfFailure{id: row.WorkflowID, jobID: id, msg: msg}
			} else if err := e.jobBuried(ctx, tx, takeOver(row, nil), row, msg, now); err != nil {
				return err
			}
		}
		if err := tx.LogInsert(ctx, []*driver.LogEntry{entry}); err != nil {
			return err
		}
		return tx.FailureInsert(ctx, fail)
	})
	if err != nil {
		return false, fmt.Errorf("bury unclaimable job %d: %w", id, err)
	}
	if buried {
		e.log.Error("queuety: job buried: its row makes every claim fail", "job_id", id, "queue", queue, "err", cause)
	}
	if wf != nil {
		if err := e.failWorkflow(ctx, *wf); err != nil {
			e.log.Error("queuety: fail workflow of unclaimable job", "workflow_id", wf.id, "job_id", id, "err", err)
		}
	}
	return buried, nil
}
