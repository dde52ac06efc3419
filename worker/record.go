package worker

import (
	"context"
	"errors"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// batchSuccess hands a success to the batch completer, unless the worker
// has stopped (a handler that outlived the shutdown reports late): then it
// returns false and the caller records the result itself.
func (w *Worker) batchSuccess(r *engine.Result) bool {
	w.resultsMu.RLock()
	defer w.resultsMu.RUnlock()
	if w.resultsClosed {
		return false
	}
	w.mu.Lock()
	w.recording[r.Claimed] = struct{}{}
	w.mu.Unlock()
	w.results <- r // successes are recorded in batches
	return true
}

// recorded ends the lease keeper's renewals of batch's attempts.
func (w *Worker) recorded(batch []*engine.Result) {
	w.mu.Lock()
	for _, r := range batch {
		delete(w.recording, r.Claimed)
	}
	w.mu.Unlock()
}

// finish records one outcome, retrying while the database is unreachable
// (for up to a minute; after that stale recovery returns the job).
func (w *Worker) finish(r *engine.Result) {
	err := w.persist("queuety: record job outcome failed; retrying", []any{"job_id", r.Claimed.Job.ID}, func() error {
		return w.engine.Finish(context.Background(), r)
	})
	w.recordOutcome(r, err)
}

// persist calls write until it succeeds, reports ErrStaleAttempt, or a
// minute has passed, backing off between tries and logging msg with attrs
// after each failure. It returns write's last error.
func (w *Worker) persist(msg string, attrs []any, write func() error) error {
	deadline := time.Now().Add(time.Minute)
	for wait := 50 * time.Millisecond; ; wait = min(wait*2, 5*time.Second) {
		err := write()
		if err == nil || errors.Is(err, queuetytype.ErrStaleAttempt) || time.Now().After(deadline) {
			return err
		}
		w.writeFailed(context.Background(), err)
		w.log.Error(msg, append(attrs, "err", err)...)
		time.Sleep(wait)
	}
}

func (w *Worker) recordOutcome(r *engine.Result, err error) {
	switch {
	case errors.Is(err, queuetytype.ErrStaleAttempt):
		w.stats.stale.Add(1)
		w.log.Info("queuety: result discarded: the attempt no longer owns its job", "job_id", r.Claimed.Job.ID, "attempt", r.Claimed.Job.Attempts)
	case err != nil:
		w.log.Error("queuety: giving up recording job outcome; stale recovery will retry the job", "job_id", r.Claimed.Job.ID, "err", err)
	case r.Err != nil:
		w.stats.failed.Add(1)
		w.log.Warn("queuety: job attempt failed", "job_id", r.Claimed.Job.ID, "handler", r.Claimed.Job.Handler,
			"attempt", r.Claimed.Job.Attempts, "err", r.Err)
	default:
		w.stats.succeeded.Add(1)
	}
	w.hooks.observe(r, err)
	if err == nil {
		w.buried(r)
	}
	if r.Observed != nil {
		w.observeEnd(r, err)
	}
	if h := w.cfg.hooks.Finished; h != nil {
		if err == nil {
			err = r.Err
		}
		h(r.Claimed.Job, err)
	}
}

// startAux starts the completer, the lease keeper and the abandoner; the
// returned function stops them after the executors are done.
//
// The lease keeper is not stopped by hardCtx: handlers cancelled at the
// end of the shutdown grace period may still run, or return a success, for
// up to the hard-stop timeout, and their claims must stay renewed until
// then, or another worker's stale recovery would run their jobs again
// while they still run. It stops when the returned function is called,
// once every handler has returned or been left running at the hard stop.
func (w *Worker) startAux(hardCtx context.Context) func() {
	w.results = make(chan *engine.Result, 4*BatchSizeMax)
	w.resultsClosed = false
	completerDone := make(chan struct{})
	go func() {
		defer close(completerDone)
		w.completer(hardCtx)
	}()
	beat, deregister := w.register(hardCtx) // registry.go
	keeperCtx, stopKeeper := context.WithCancel(context.WithoutCancel(hardCtx))
	keeperDone := make(chan struct{})
	go func() {
		defer close(keeperDone)
		defer deregister() // after the drain: the handlers have returned
		w.leaseKeeper(keeperCtx, beat)
	}()
	// Handlers cancelled by the shutdown are not abandoned (they get the
	// hard-stop timeout instead): the abandoner stops with hardCtx.
	abandonerCtx, stopAbandoner := context.WithCancel(hardCtx)
	abandonerDone := make(chan struct{})
	go func() {
		defer close(abandonerDone)
		if w.cfg.abandonGrace >= 0 {
			w.abandoner(abandonerCtx)
		}
	}()
	stopHooks := w.hooks.start(hardCtx)
	return func() {
		stopKeeper()
		stopAbandoner()
		<-keeperDone
		<-abandonerDone
		w.resultsMu.Lock()
		w.resultsClosed = true
		close(w.results)
		w.resultsMu.Unlock()
		<-completerDone
		stopHooks()
	}
}

// completer records successes in batches: whatever has queued up while
// the previous batch was written goes into the next one. Jobs handed off
// eagerly run under ctx, as claimed jobs do.
func (w *Worker) completer(ctx context.Context) {
	for r := range w.results {
		batch := w.gather(r) // on a store with serial writers: all that is about to finish, then wait for the turn
	fill:
		for len(batch) < BatchSizeMax {
			select {
			case more, ok := <-w.results:
				if !ok {
					break fill
				}
				batch = append(batch, more)
			default:
				break fill
			}
		}
		w.completeBatch(ctx, batch)
		w.recorded(batch)
		w.serial.give()
		select { // a recorded step may have enqueued the next one
		case w.freed <- struct{}{}:
		default:
		}
	}
}

// completeBatch records a batch of successes: plain jobs with one
// CompleteJobs call and workflow steps with one CompleteSteps call, each
// retried while the database is unreachable (for up to a minute; after
// that stale recovery returns the jobs).
func (w *Worker) completeBatch(ctx context.Context, batch []*engine.Result) {
	var jobs, steps []*engine.Result
	for _, r := range batch {
		if r.Claimed.IsStep() {
			steps = append(steps, r)
		} else {
			jobs = append(jobs, r)
		}
	}
	w.recordBatch(jobs, w.engine.CompleteJobs)
	w.recordBatch(steps, w.completeSteps(ctx))
}

func (w *Worker) recordBatch(batch []*engine.Result, complete func(context.Context, []*engine.Result) ([]error, error)) {
	if len(batch) == 0 {
		return
	}
	var errs []error
	err := w.persist("queuety: record completed jobs failed; retrying", []any{"count", len(batch)}, func() (err error) {
		errs, err = complete(context.Background(), batch)
		return err
	})
	for i, r := range batch {
		switch {
		case err != nil:
			w.recordOutcome(r, err)
		case errs[i] != nil && !errors.Is(errs[i], queuetytype.ErrStaleAttempt):
			w.finish(r) // a database error on this one result: retry it alone
		default:
			w.recordOutcome(r, errs[i])
		}
	}
}
