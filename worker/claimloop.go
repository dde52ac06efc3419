package worker

// The claim loop: claiming due jobs into free slots, backing off after
// failed claims, and handing back jobs this worker will not run.

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
)

// idle reports, in once mode, that nothing is running, no result is
// waiting to be recorded, and nothing is due.
func (w *Worker) idle(ctx context.Context) bool {
	w.mu.Lock()
	working := w.busy > 0 || len(w.recording) > 0
	w.mu.Unlock()
	if working {
		return false
	}
	due, err := w.engine.HasDueAdmitted(ctx, w.cfg.queues, w.handlers(), w.cfg.limits.adm)
	if err != nil {
		w.log.Warn("queuety: check for due jobs", "err", err)
		return ctx.Err() != nil
	}
	return !due
}

// fetchLoop claims jobs into free slots until ctx is done or done()
// reports true (once mode).
func (w *Worker) fetchLoop(ctx, hardCtx context.Context, done func() bool) {
	backoff := time.Duration(0)
	poll := w.cfg.pollInterval // the idle wait; shortened after claims that found work
	hold, skipHold := w.holding(), 0
	for ctx.Err() == nil {
		// With less than a batch of slots free, give running handlers a
		// moment to free more, so that a claim takes a full batch; with
		// none free, wait for one.
		// The wait may have outlived the worker's claiming: claim nothing
		// once ctx is done.
		if !w.gatherSlots(ctx) || ctx.Err() != nil {
			continue
		}
		if !w.serial.take(ctx) {
			continue
		}
		n := min(w.Concurrency()-w.taken(), w.cfg.batchSize)
		var t0 time.Time
		if w.obs != nil {
			t0 = time.Now()
		}
		var held *heldBatch
		if hold && skipHold == 0 {
			held = w.claimHeld(ctx, n) // hold.go
		}
		skipHold = max(skipHold-1, 0)
		var jobs []*engine.Claimed
		var err error
		m := n
		if held == nil || len(held.held.Jobs) < n { // the rest, claimed as usual
			if held != nil {
				m -= len(held.held.Jobs)
			}
			jobs, err = w.engine.Claim(context.WithoutCancel(ctx), engine.ClaimRequest{Queues: w.cfg.queues, Handlers: w.handlers(), Limit: m, Admission: w.cfg.limits.adm})
			if hold && held == nil && len(jobs) > 0 {
				skipHold = holdSkip // nothing to hold among due jobs: try again later
			}
		}
		w.serial.give()
		if held != nil {
			if ctx.Err() != nil {
				if held.held.Rollback() { // claimed meanwhile: release them
					w.handBack(held.held.Jobs)
				} else {
					w.stats.handedBack.Add(int64(len(held.held.Jobs)))
				}
			} else {
				w.stats.claimed.Add(int64(len(held.held.Jobs)))
				hp := hardCtx
				if w.obs != nil {
					hp = w.observeClaim(hardCtx, t0, len(held.held.Jobs), held.held.Jobs, nil)
				}
				w.startHeld(hp, held)
			}
		}
		parent := hardCtx // the claimed jobs' contexts descend from it
		if w.obs != nil {
			parent = w.observeClaim(hardCtx, t0, n, jobs, err)
		}
		if err != nil {
			w.writeFailed(ctx, err)
			backoff = min(max(backoff*2, claimBackoffMin), claimBackoffMax)
			w.log.Error("queuety: claim failed; retrying", "err", err, "in", backoff)
			if h := w.cfg.test.claimBackoff; h != nil {
				h(backoff)
			}
			sleep(ctx, backoff)
			continue
		}
		backoff = 0
		if ctx.Err() != nil && len(jobs) > 0 {
			w.handBack(jobs)
			return
		}
		w.stats.claimed.Add(int64(len(jobs)))
		if w.woken && w.wake != nil && len(jobs) > 0 && len(jobs) == m {
			// Woken, and the claim filled its batch: more jobs may wait
			// than the wake-up counted, so wake another idle worker.
			w.wake.PassOn(jobs)
		}
		w.woken = false
		for _, cj := range jobs {
			w.start(parent, cj)
		}
		if len(jobs) > 0 || held != nil {
			poll = min(PollIntervalBusy, w.cfg.pollInterval)
			continue
		}
		if done != nil {
			if done() {
				return
			}
			w.waitFreed(ctx, 50*time.Millisecond)
			continue
		}
		// Adaptive polling: right after work, other processes' jobs are
		// likely to keep coming, so the wait starts at PollIntervalBusy
		// and doubles with each empty claim up to the poll interval. Then
		// the worker is idle and waits for the next due job (waitDue).
		if poll >= w.cfg.pollInterval {
			w.waitDue(ctx)
			continue
		}
		w.waitIdle(ctx, w.idleWait(jitter(poll, 0.1)))
		poll = min(2*poll, w.cfg.pollInterval)
	}
}

// waitDue is the wait of an idle worker, after a claim that found
// nothing: it reads when the next job it could claim falls due (one
// statement per queue, no transaction) and sleeps until then, until a
// wake-up (a job committed in this process, or in another one while the
// cross-process wake-up is live), until a handler finishes, or for its
// idle poll interval at most, and reads again; it returns when a job is
// due, so the claim that follows finds it. The idle poll interval is
// IdlePollInterval while the wake-up is live, and the poll interval while
// it is not (or on a store without one), so jobs nothing wakes the
// worker for (Queuety PHP's, another database user's, a Galera node the
// dispatching process cannot reach) start within it. A job the read reported due that the claim
// did not take (a rate limit, a concurrency group) is claimed again after
// the poll interval, as before. On a store that cannot read the next due
// time, or when the read fails, it waits the poll interval and returns.
func (w *Worker) waitDue(ctx context.Context) {
	for first := true; ctx.Err() == nil; first = false {
		at, ok, known, err := w.engine.NextDue(ctx, w.cfg.queues, w.handlers())
		if err != nil && ctx.Err() == nil {
			w.log.Warn("queuety: read the next due job", "err", err)
		}
		if !known || err != nil {
			w.waitIdle(ctx, w.idleWait(jitter(w.cfg.pollInterval, 0.1)))
			return
		}
		limit := w.cfg.pollInterval
		if w.engine.WakeLive() {
			limit = max(w.cfg.idlePoll, limit)
		}
		wait := jitter(limit, 0.1)
		if ok {
			d := at.Sub(w.engine.Clock().Now())
			if d <= 0 {
				if !first {
					return
				}
				// Due, yet the claim just before took nothing: claim
				// again after the poll interval, as a polling worker
				// would.
				w.waitIdle(ctx, w.idleWait(jitter(w.cfg.pollInterval, 0.1)))
				return
			}
			wait = min(wait, d)
		}
		if w.waitIdle(ctx, w.idleWait(wait)) {
			return
		}
	}
}

// holdSkip is how many claims skip the held claim after one that found
// due jobs but none it could hold.
const holdSkip = 8

// The wait before a failed claim is tried again: it starts at
// claimBackoffMin and doubles up to claimBackoffMax while the claims
// fail, so a worker resumes within claimBackoffMax of the database coming
// back.
const (
	claimBackoffMin = 100 * time.Millisecond
	claimBackoffMax = 2 * time.Second
)

// ClaimGather is how long a worker with some free slots, but less than a
// batch, waits for the next running handler to finish before it claims;
// each finish restarts the wait, up to ClaimGatherMax in all. Quick
// handlers then fill a whole batch per claim, and slow ones delay a claim
// by ClaimGather at most.
const (
	ClaimGather    = 2 * time.Millisecond
	ClaimGatherMax = 20 * time.Millisecond
)

// gatherSlots waits until a batch of slots is free, or no handler has
// finished for ClaimGather (ClaimGatherMax in all) with at least one slot
// free; with none free it first waits up to ClaimGatherMax for one. It
// reports whether a slot is free.
func (w *Worker) gatherSlots(ctx context.Context) bool {
	want := w.gatherWant()
	free := func() int { return w.Concurrency() - w.taken() }
	if free() >= want {
		return true
	}
	if free() <= 0 && !w.freedWithin(ctx, ClaimGatherMax) {
		return free() > 0
	}
	start := time.Now()
	until := start.Add(ClaimGatherMax)
	for free() < want && ctx.Err() == nil {
		// Finishing handlers do not wake the loop one by one (slotFreed):
		// wait until ClaimGather has passed since the last finish (or
		// since the wait began), or a whole batch is free.
		last := max(w.lastFinish.Load(), start.UnixNano())
		quiet := time.Until(time.Unix(0, last).Add(w.cfg.claimGather))
		wait := min(quiet, time.Until(until))
		if wait <= 0 {
			break
		}
		w.freedWithin(ctx, wait)
	}
	return free() > 0
}

// busyCount is the number of running handlers, abandoned ones left out.
func (w *Worker) busyCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busy
}

// taken is the number of slots taken (see takenLocked).
func (w *Worker) taken() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.takenLocked()
}

// takenLocked is the number of slots taken: the running handlers, the
// held jobs waiting for their held claim to be written (hold.go), plus
// the abandoned handlers past MaxAbandoned, which hold their slots again.
// Called with w.mu held.
func (w *Worker) takenLocked() int {
	return w.busy + int(w.heldWaiting.Load()) + max(len(w.abandoned)-w.cfg.maxAbandoned, 0)
}

// waitFreed waits until a handler finishes, d passes, or ctx is done.
func (w *Worker) waitFreed(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.freed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitIdle is the wait of an idle worker between claims: until a handler
// finishes, this process dispatches jobs (Run only), ctx is done, or d passes in real time or on the engine clock
// (see TimerClock), so a job that falls due because a fake clock moved is
// claimed at once.
// It reports whether a wake-up or a finished handler ended it.
func (w *Worker) waitIdle(ctx context.Context, d time.Duration) bool {
	t := w.newEither(d)
	defer t.stop()
	var wake <-chan struct{}
	if w.wake != nil {
		wake = w.wake.C
		w.wake.Idle(true)
		defer w.wake.Idle(false)
	}
	select {
	case <-wake:
		w.woken = true
		return true
	case <-w.freed:
		return true
	case <-t.real.C:
	case <-t.engC():
	case <-ctx.Done():
	}
	return false
}

func (w *Worker) handBack(jobs []*engine.Claimed) {
	if err := w.engine.Release(context.Background(), jobs); err != nil {
		w.writeFailed(context.Background(), err)
		w.log.Error("queuety: hand back claimed jobs (stale recovery will return them)", "count", len(jobs), "err", err)
		return
	}
	w.stats.handedBack.Add(int64(len(jobs)))
}

// DeferDelay is how long a job this worker cannot run (its step's reducer
// or repeat condition is not registered here) waits before it is due
// again, so that a worker that has it, Go or Queuety PHP, takes it.
const DeferDelay = 5 * time.Second

// deferJob hands back a job this worker lacks a function for, due again
// after DeferDelay, without using an attempt.
func (w *Worker) deferJob(cj *engine.Claimed, missing string) {
	w.log.Warn("queuety: job deferred: this worker does not have its "+missing+"; a worker that has it (Go or PHP) will run it",
		"job_id", cj.Job.ID, "handler", cj.Job.Handler, "workflow_id", cj.Job.WorkflowID, "retry_in", DeferDelay)
	if err := w.engine.Defer(context.Background(), cj, DeferDelay); err != nil {
		w.log.Error("queuety: defer job (stale recovery will return it)", "job_id", cj.Job.ID, "err", err)
		return
	}
	w.stats.handedBack.Add(1)
}
