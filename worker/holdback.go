package worker

import (
	"context"
	"sync"
	"time"
)

// Holding back stale recovery after this process's own writes failed.
//
// Stale recovery takes a job back when its claim has not been renewed for
// the lease timeout. While the database refuses writes (it is down, read
// only, or unreachable from here), no worker can renew its claims, and a
// success waiting to be recorded cannot be recorded either; once writes
// work again, every live worker renews its claims within a lease interval.
// A sweep run in that first moment would find claims that look dead only
// because nobody could write, and would run their jobs again: jobs still
// running, and jobs whose successes were about to be recorded.
//
// So a worker's stale sweep runs only once this process's writes have
// worked for a whole lease timeout: after any failed write (a claim, a
// renewal, a recording, a hand-back, a stale sweep) it skips its stale sweeps
// until a lease timeout has passed since, on real time or on the engine
// clock, whichever passes first. Every live worker renews its claims at
// least twice per lease timeout, so by then any claim still unrenewed
// belongs to a worker that is gone or cannot reach the database.

// writeHealth records when this process's writes last failed.
type writeHealth struct {
	mu      sync.Mutex
	real    time.Time // zero: none failed
	eng     time.Time
	holding bool // the stale sweep is held back (for logging the change once)
}

// writeFailed notes that a database write failed with err. Errors of a
// cancelled context are not the database's.
func (w *Worker) writeFailed(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	now, eng := time.Now(), w.engine.Clock().Now()
	w.writes.mu.Lock()
	w.writes.real, w.writes.eng = now, eng
	w.writes.mu.Unlock()
}

// staleHeldBack reports whether the stale sweep must wait: this process's
// writes failed less than a lease timeout ago, on both clocks. It logs
// when the hold-back starts and ends.
func (w *Worker) staleHeldBack() bool {
	lease := w.engine.LeaseTimeout()
	now, eng := time.Now(), w.engine.Clock().Now()
	w.writes.mu.Lock()
	failed := w.writes.real
	held := !failed.IsZero() && now.Sub(failed) < lease && eng.Sub(w.writes.eng) < lease
	changed := held != w.writes.holding
	w.writes.holding = held
	w.writes.mu.Unlock()
	if changed && held {
		w.log.Warn("queuety: stale recovery held back: this process's database writes failed, so other workers may not have been able to renew their claims either",
			"until_writes_work_for", lease)
	} else if changed {
		w.log.Info("queuety: stale recovery resumed: database writes have worked for the lease timeout", "lease_timeout", lease)
	}
	return held
}

// recoverStale is the worker's stale sweep: the sweeper's, unless it is
// held back.
func (w *Worker) recoverStale(ctx context.Context) (int, error) {
	if w.staleHeldBack() {
		return 0, nil
	}
	return w.sweeper.Stale(ctx)
}
