package worker

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
)

// Eager step handoff (see EagerSteps): the completer offers the worker's
// free slots to the transaction that records a batch of step successes,
// and starts the next steps' jobs that transaction inserted already
// claimed for this worker.

// completeSteps returns the completer's recorder of step successes: with
// eager handoff on and slots free, it reserves up to as many slots as
// the batch may hand off (one a step, one a branch of a parallel step
// next, every free slot for a for-each placeholder's expansion),
// records the batch offering them, starts the jobs handed off (under
// parent, as claimed jobs are) and frees the slots left unused.
func (w *Worker) completeSteps(parent context.Context) func(context.Context, []*engine.Result) ([]error, error) {
	return func(ctx context.Context, batch []*engine.Result) ([]error, error) {
		want := 0
		for _, r := range batch {
			want += r.Claimed.Handoffs(w.Concurrency())
		}
		held := w.reserveSlots(want)
		if held == 0 {
			return w.engine.CompleteSteps(ctx, batch)
		}
		t0 := time.Now()
		offer := &engine.EagerOffer{Slots: held, Queues: w.cfg.queues, Handlers: w.handlers(), Admission: w.cfg.limits.adm}
		errs, handed, err := w.engine.CompleteStepsEager(ctx, batch, offer)
		w.startHanded(parent, t0, held, handed)
		return errs, err
	}
}

// reserveSlots holds up to n free slots for jobs handed off eagerly, and
// returns how many it holds: none when eager handoff is off or the worker
// is stopping. A held slot counts as busy (claims do not fill it) and as
// running for the shutdown's wait.
func (w *Worker) reserveSlots(n int) int {
	if w.cfg.noEager {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return 0
	}
	k := max(min(n, w.Concurrency()-w.takenLocked()), 0)
	w.busy += k
	w.wg.Add(k)
	return k
}

// startHanded starts the jobs handed off into held slots, or hands them
// back when the worker began stopping meanwhile, then frees the slots
// left unused.
func (w *Worker) startHanded(parent context.Context, t0 time.Time, held int, handed []*engine.Claimed) {
	w.mu.Lock()
	stopping := w.stopping
	w.mu.Unlock()
	if stopping && len(handed) > 0 {
		w.handBack(handed)
		handed = nil
	}
	if len(handed) > 0 {
		if w.obs != nil {
			parent = w.observeClaim(parent, t0, held, handed, nil)
		}
		w.stats.claimed.Add(int64(len(handed)))
		w.stats.eager.Add(int64(len(handed)))
		for _, cj := range handed {
			w.launch(parent, cj, true)
		}
	}
	if unused := held - len(handed); unused > 0 {
		w.mu.Lock()
		w.busy -= unused
		w.mu.Unlock()
		w.wg.Add(-unused)
		select {
		case w.freed <- struct{}{}:
		default:
		}
	}
}

// setStopping marks the worker as stopping (no more eager handoff) or
// running.
func (w *Worker) setStopping(v bool) {
	w.mu.Lock()
	w.stopping = v
	w.mu.Unlock()
}
