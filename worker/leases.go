package worker

// Keeping claims: the lease keeper renews the claims of running jobs
// until their handlers return, and drain waits for them at shutdown.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// leaseKeeper renews the claims of running jobs and cancels the handlers
// of jobs this worker no longer owns. It runs every lease interval, of real
// time or of the engine clock (see TimerClock), whichever passes first: a
// claim is stale when the engine clock has gone past the stale timeout
// without a renewal.
//
// After each renewal it renews the worker's row in the worker registry
// (beat, see registry.go), so the registry's heartbeat is the lease
// keeper's.
func (w *Worker) leaseKeeper(ctx context.Context, beat func(context.Context)) {
	for {
		t := w.newEither(w.cfg.leaseInterval)
		select {
		case <-ctx.Done():
			t.stop()
			return
		case <-t.real.C:
		case <-t.engC():
		}
		t.stop()
		w.renewLeases(ctx)
		beat(ctx)
	}
}

// renewLeases renews the claims of the running jobs once and cancels the
// handlers of the jobs the worker lost.
func (w *Worker) renewLeases(ctx context.Context) {
	w.mu.Lock()
	running := make([]*attempt, 0, len(w.inflight))
	jobs := make([]*engine.Claimed, 0, len(w.inflight))
	for _, a := range w.inflight {
		if a.unsettled() {
			continue // held: locked, not claimed, nothing to renew (hold.go)
		}
		running = append(running, a)
		jobs = append(jobs, a.cj)
	}
	var waiting []*engine.Claimed
	for cj := range w.recording {
		// A success waiting to be recorded keeps its claim too, unless
		// a later attempt of the job runs here (then this one has lost
		// it, and its result will be refused as stale).
		if w.inflight[cj.Job.ID] == nil {
			waiting = append(waiting, cj)
		}
	}
	w.mu.Unlock()
	if len(jobs)+len(waiting) == 0 {
		return
	}
	if h := w.cfg.test.renewing; h != nil {
		h(len(jobs))
	}
	began := time.Now()
	lost, err := w.engine.RenewLeases(ctx, jobs, waiting)
	if took := time.Since(began); took > w.cfg.leaseInterval {
		// Claims renewed late are close to being recovered as stale
		// while their handlers still run.
		w.log.Warn("queuety: renewing job claims took longer than the lease interval",
			"took", took.Round(time.Millisecond), "claims", len(jobs)+len(waiting), "lease_interval", w.cfg.leaseInterval)
	}
	if err != nil {
		if ctx.Err() == nil {
			w.writeFailed(ctx, err)
			w.log.Warn("queuety: renew job claims", "err", err)
		}
		return
	}
	// Cancel the attempts RenewLeases checked, not whatever runs under
	// the same job id by now. An attempt whose handler has returned
	// meanwhile was not taken away: its own recording (or its
	// abandonment) may have settled the job since the list was made,
	// and a result that did lose its job is refused and logged when
	// recorded.
	for _, a := range running {
		if cause, ok := lost[a.cj.Job.ID]; ok && a.state.Load() == attemptRunning {
			w.log.Warn("queuety: job taken away from running handler", "job_id", a.cj.Job.ID, "reason", cause)
			a.cancel(cause)
		}
	}
	if h := w.cfg.test.renewed; h != nil {
		h(len(jobs))
	}
}

// drain waits for running handlers: up to the shutdown timeout, then
// cancels them with ErrWorkerShutdown and waits for them to return. It
// does not wait for abandoned handlers, only for their recording.
func (w *Worker) drain(hardCancel context.CancelCauseFunc) error {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(w.cfg.shutdownTimeout)
	defer grace.Stop()
	select {
	case <-done:
		return nil
	case <-grace.C:
	}
	w.log.Warn("queuety: shutdown grace period over; cancelling running handlers", "running", w.busyCount())
	hardCancel(queuetytype.ErrWorkerShutdown)
	hard := time.NewTimer(w.cfg.hardStopTimeout)
	defer hard.Stop()
	select {
	case <-done:
		return nil
	case <-hard.C:
	}
	stuck := w.inflightIDs()
	w.log.Error("queuety: handlers ignored their cancelled context; stopping without them (their jobs stay claimed until the lease expires)",
		"job_ids", stuck, "hard_stop_timeout", w.cfg.hardStopTimeout)
	return &ShutdownError{JobIDs: stuck}
}

// inflightIDs returns the ids of the jobs whose handlers are running, sorted.
func (w *Worker) inflightIDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int64, 0, len(w.inflight))
	for id := range w.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ShutdownError is returned by Run and RunOnce when handlers were still
// running after the grace period and the hard-stop period: they ignored
// their cancelled context. The worker returns without them. Their jobs stay
// claimed, are no longer renewed, and are recovered by lease expiry; a
// result such a handler reports later is recorded only if its attempt still
// owns the job.
type ShutdownError struct {
	JobIDs []int64 // jobs whose handlers were still running
}

// Error says how many handlers were left running.
func (e *ShutdownError) Error() string {
	return fmt.Sprintf("worker: stopped with %d handler(s) still running (jobs %v): they ignored their cancelled context", len(e.JobIDs), e.JobIDs)
}

// recordingCount is the number of successes handed to the completer and
// not yet recorded.
func (w *Worker) recordingCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.recording)
}
