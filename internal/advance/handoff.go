package advance

// This file decides who expires a workflow whose deadline handler the
// sweeping process cannot run, so that in a fleet of Go and Queuety PHP
// workers the handler runs, once.
//
// Queuety PHP's sweep calls a deadline handler in-process (a class with
// handle(array $state)), and only when the class exists there; a Go
// sweep enqueues the handler as a job for the workers that registered it.
// Neither can run the other's handlers. So:
//
//   - A Go process whose workers do not have a running workflow's
//     deadline handler leaves the expiry alone for the handoff period
//     after the deadline: a Go worker that has the handler, or PHP's sweep
//     (which runs every 60 seconds in each long-running PHP worker), takes
//     it. A step result or claim that arrives in the meantime is buried
//     with "Deadline exceeded" and the workflow does not advance. After
//     the handoff any Go sweeper expires it the Go way (the handler is
//     enqueued as a job), so a workflow never overstays its deadline by
//     more than the handoff when no worker has its handler.
//   - PHP's sweep fails a workflow whose handler is a Go handler without
//     calling it. A Go sweeper that has the handler finds such workflows
//     (failed, "Deadline exceeded", no failure row: Go's expiry always
//     writes one in the transaction that enqueues the handler) and, under
//     the workflow's row lock, records the timeout failure and enqueues
//     the handler: once, however many Go sweepers look.
//
// PHP sweeps only running workflows, and only their execution deadline, so
// paused and waiting workflows and run deadlines are always expired by Go
// at once.

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// ForeignExpiryLookback is how far back in deadlines a Go sweeper looks for
// workflows another engine expired without running their Go deadline
// handler.
const ForeignExpiryLookback = 24 * time.Hour

// knows reports whether a worker of this process runs the handler, and
// whether the process has workers at all.
func (s *Service) knows(handler string) (known, anyWorker bool) { return s.core.Knows(handler) }

// DeadlineHandoff is how long past a deadline the engine leaves a
// workflow whose deadline handler it cannot run to a worker that can.
func (s *Service) DeadlineHandoff() time.Duration { return s.cfg.DeadlineHandoff }

// LeaveExpiry reports whether this process should leave the expiry of wf
// to a worker that has its deadline handler (see the file comment).
func (s *Service) LeaveExpiry(wf *driver.Workflow, state *phpjson.Object, kind driver.TimeoutKind, now time.Time) bool {
	if kind != driver.TimeoutExecution || wf.Status != driver.WorkflowRunning || s.cfg.DeadlineHandoff <= 0 ||
		!now.Before(wf.DeadlineAt.Add(s.cfg.DeadlineHandoff)) {
		return false
	}
	handler := handlerRef(state, "_on_deadline")
	if handler == "" {
		return false
	}
	known, anyWorker := s.knows(handler)
	return anyWorker && !known
}

// HoldExpired is what a process that leaves an expiry to others does when
// the expired workflow's step reports or is claimed: the attempt is
// recorded as overrun and the workflow's open jobs are buried with
// "Deadline exceeded", so it does not advance past its deadline; the
// workflow stays running for the sweep that has its handler.
func (s *Service) HoldExpired(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time, at *Overrun) error {
	msg := queuetytype.ErrDeadlineExceeded.Error()
	if at != nil {
		if err := s.traceOverrun(ctx, tx, wf, state, at, msg, now); err != nil {
			return err
		}
	}
	return s.BuryOpenJobs(ctx, tx, wf.ID, 0, msg, now)
}

// TakeForeignExpiryLocked handles wf, locked by the caller, a workflow
// that another engine (Queuety PHP's sweep) failed at its deadline without
// running its deadline handler, because the handler is one this process's
// workers registered: it records the timeout failure and enqueues the
// handler, so it runs once. A workflow whose handler this process does not
// have is skipped until its deadline leaves the lookback (PHP ran it, or
// another Go worker will). It reports whether it enqueued a handler.
func (s *Service) TakeForeignExpiryLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		state = phpjson.NewObject()
	}
	handler := handlerRef(state, "_on_deadline")
	if handler != "" {
		if known, _ := s.knows(handler); !known {
			s.skipForeign(wf.ID, wf.DeadlineAt)
			return false, nil
		}
	}
	// The find's NOT EXISTS read a snapshot from before the row
	// lock; a sweeper that committed in between is seen now.
	if prior, err := tx.FailureList(ctx, wf.ID, 0); err != nil || len(prior) > 0 {
		return false, err
	}
	f := &driver.Failure{WorkflowID: wf.ID, Category: driver.FailureTimeout, TimeoutKind: driver.TimeoutExecution,
		RunNumber: max(wf.RunNumber, 1), Message: wf.ErrorMessage, ErrorClass: "queuetytype.TimeoutError", DeadlineAt: wf.DeadlineAt, CreatedAt: now}
	if err := tx.FailureInsert(ctx, f); err != nil {
		return false, err
	}
	if handler == "" {
		return false, nil
	}
	return true, s.EnqueueCallback(ctx, tx, wf, state, "_on_deadline", "deadline", now)
}

// ForeignExpirySkips returns the workflows the foreign expiry sweep
// moves past, dropping those whose deadline is before since.
func (s *Service) ForeignExpirySkips(since time.Time) []int64 {
	s.skips.mu.Lock()
	defer s.skips.mu.Unlock()
	var ids []int64
	for id, at := range s.skips.foreign {
		if at.Before(since) {
			delete(s.skips.foreign, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

func (s *Service) skipForeign(id int64, deadline time.Time) {
	s.skips.mu.Lock()
	defer s.skips.mu.Unlock()
	if s.skips.foreign == nil {
		s.skips.foreign = map[int64]time.Time{}
	}
	s.skips.foreign[id] = deadline
}
