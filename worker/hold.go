package worker

// Held claims (HoldClaims): due plain jobs run while their rows stay
// locked, and a completed one changes its status once.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// HoldClaimsDefault is the bound of HoldClaims(0).
const HoldClaimsDefault = 50 * time.Millisecond

// HoldClaims makes the worker hold its claims of short plain jobs, on
// MySQL and MariaDB: it locks due jobs (FOR UPDATE SKIP LOCKED) without
// changing them, runs their handlers while the transaction stays open,
// and when all have returned, or bound has passed, writes in that
// transaction each completed job as completed (attempt counted, both log
// rows, the columns the normal claim and completion write: a reader
// cannot tell the difference) and claims the others as the normal claim
// does: failed attempts, then recorded as usual, and handlers still
// running, which go on under the normal lease and completion. A completed
// job so changes its status once instead of twice, which saves about a
// third of its database server time. The held claims that the workers of
// one client make at the same time share one transaction: one locking
// scan for all of them, and one write and commit once every worker's batch
// is done (its handlers returned, or the bound passed since the scan).
// A worker whose batch is not handed in half a bound after the bound (its
// goroutine stalled) has its jobs claimed as usual in that write, so it
// delays the others by that at most, and records them the normal way.
// bound 0 takes HoldClaimsDefault; a negative bound turns it off (the
// default).
//
// Only jobs that nothing else counts while they run are held: plain jobs
// without workflow, batch, concurrency group, activity timeouts, runtime
// options, chain or callback, and only while the worker's admission has no
// limits; the rest is claimed as before. Trade-offs: a held job reads
// pending in the table while it runs (Queuety PHP's and Go's claims skip
// it, as it is locked); the row lock is the claim's fence, so when the
// transaction does not commit (the connection lost, the commit failed)
// nothing is written and the jobs run again later (at least once). Before
// the handlers of a held transaction run, one journal row naming its jobs
// is written and committed beside it (the Go engine's table
// {prefix}queuety_go_held_claims; if it cannot be written, the claim is
// not held), and the commit deletes it: when the process dies instead
// (os.Exit, a fatal error, the OOM killer), stale recovery, once the row
// has outlived the transaction (two bounds, the idle timeout and 30 s),
// counts an attempt for each of its jobs still pending and unchanged, as
// for a normal claim's dead worker, and buries a job whose attempts are
// used up, so a handler that kills its process ends buried. A stopped
// process (SIGSTOP, a debugger) holds the rows until the server ends its
// idle transaction: MariaDB's idle_transaction_timeout and MySQL's
// wait_timeout are set on the held connection to a few times bound (at
// least one second). Stores without held claims (PostgreSQL, SQLite)
// ignore the option and log so at start, and so does a MySQL store on a
// Galera cluster: row locks are local to a node, so a worker writing
// through another node would not see a held claim's locks and would claim
// and run its jobs too. There the workers claim as usual (the claim's
// write is certified across the nodes). A store whose sessions do not
// replicate (wsrep_on=OFF in the DSN, so every write stays on one node)
// still holds claims.
func HoldClaims(bound time.Duration) Option {
	return func(c *config) {
		if bound == 0 {
			bound = HoldClaimsDefault
		}
		c.holdBound = bound
	}
}

// holdIdle is the server's idle timeout of a held transaction for bound.
func holdIdle(bound time.Duration) time.Duration { return max(4*bound, time.Second) }

// heldBatch is one held claim while its handlers run.
type heldBatch struct {
	held *engine.Held
	// waiting is the worker's count of held jobs whose handlers have
	// returned and whose batch is not written yet: their slots stay
	// taken until it is (takenLocked), so the held transactions a worker
	// keeps open are bounded by its concurrency.
	waiting *atomic.Int64
	mu      sync.Mutex
	// settled is set once the batch is written: handlers that report
	// later were converted (claimed) and record the normal way.
	settled bool
	left    int // handlers that have not reported
	results []*engine.Result
	backs   map[*engine.Claimed]bool // handed back: stay pending
	atts    []*attempt
	all     chan struct{} // closed when left reaches 0
}

// report hands an attempt's result to the batch; false when the batch has
// settled and the caller records it the normal way.
func (b *heldBatch) report(r *engine.Result) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.settled {
		return false
	}
	b.results = append(b.results, r)
	b.waiting.Add(1)
	b.doneOne()
	return true
}

// handBack takes a job interrupted by the shutdown: unsettled, it stays
// pending with nothing written. False when the batch has settled.
func (b *heldBatch) handBack(cj *engine.Claimed) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.settled {
		return false
	}
	b.backs[cj] = true
	b.waiting.Add(1)
	b.doneOne()
	return true
}

func (b *heldBatch) doneOne() {
	if b.left--; b.left == 0 {
		close(b.all)
	}
}

// unsettled reports whether the attempt's job is still held (not claimed).
func (a *attempt) unsettled() bool {
	if a.hold == nil {
		return false
	}
	a.hold.mu.Lock()
	defer a.hold.mu.Unlock()
	return !a.hold.settled
}

// holding reports whether the worker holds claims, logging once at the
// start why it does not when asked to.
func (w *Worker) holding() bool {
	if w.cfg.holdBound <= 0 {
		return false
	}
	if why := w.engine.NoHoldReason(); why != "" {
		w.log.Info("queuety: HoldClaims ignored; claiming as usual", "reason", why, "store", w.c.StoreInfo().Driver)
		return false
	}
	w.log.Info("queuety: holding claims of plain jobs", "bound", w.cfg.holdBound, "idle_timeout", holdIdle(w.cfg.holdBound))
	return true
}

// claimHeld holds a claim of up to n jobs, or returns nil (nothing due
// that can be held, the admission has limits, or the claim failed, which
// it logs: the normal claim follows).
func (w *Worker) claimHeld(ctx context.Context, n int) *heldBatch {
	if adm := w.cfg.limits.adm; adm != nil && !adm.Plain() {
		return nil
	}
	p := engine.HeldParams{Bound: w.cfg.holdBound, Idle: holdIdle(w.cfg.holdBound), Holder: w}
	if f := w.cfg.test.heldTogether; f != nil {
		p.Together = f()
	}
	h, err := w.engine.ClaimHeld(ctx, engine.ClaimRequest{Queues: w.cfg.queues, Handlers: w.handlers(), Limit: n}, p)
	if err != nil {
		w.writeFailed(ctx, err)
		w.log.Warn("queuety: held claim failed; claiming as usual", "err", err)
		return nil
	}
	if h == nil {
		return nil
	}
	return &heldBatch{held: h, waiting: &w.heldWaiting, left: len(h.Jobs), backs: map[*engine.Claimed]bool{}, all: make(chan struct{})}
}

// startHeld runs a held batch's jobs and settles it when they have all
// reported or the bound has passed.
func (w *Worker) startHeld(parent context.Context, b *heldBatch) {
	b.atts = make([]*attempt, len(b.held.Jobs))
	for i, cj := range b.held.Jobs {
		b.atts[i] = w.launchWith(parent, cj, false, b)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.settle(b)
	}()
}

// settle waits for a held batch's handlers, up to the bound (the
// engine's Due, the same for every share of its transaction), and writes
// its outcome: completed jobs completed, failed attempts and handlers
// still running claimed; then it records the failures the normal way.
// When the transaction did not wait for the batch (this goroutine came
// late), the engine claimed all its jobs: every outcome is recorded the
// normal way.
func (w *Worker) settle(b *heldBatch) {
	select {
	case <-b.all:
	case <-b.held.Due():
	}
	if h := w.cfg.test.heldSettle; h != nil {
		h(b.held.Jobs)
	}
	b.mu.Lock()
	b.settled = true
	reported := map[*engine.Claimed]bool{}
	var completed, failed []*engine.Result
	var convert []*engine.Claimed
	for _, r := range b.results {
		reported[r.Claimed] = true
		if r.Err == nil && r.Claimed.Err() == nil {
			completed = append(completed, r)
		} else {
			failed = append(failed, r)
			convert = append(convert, r.Claimed)
		}
	}
	var running []*attempt
	for _, a := range b.atts {
		if !reported[a.cj] && !b.backs[a.cj] {
			running = append(running, a)
			convert = append(convert, a.cj)
		}
	}
	b.mu.Unlock()
	claimed, err := b.held.Settle(completed, convert)
	w.heldWaiting.Add(-int64(len(b.results) + len(b.backs))) // their slots are free now
	w.slotFreed(w.taken())
	if claimed && err == nil {
		w.claimedLate(b, completed, failed)
		return
	}
	if len(b.backs) > 0 {
		w.stats.handedBack.Add(int64(len(b.backs)))
	}
	if err != nil {
		w.writeFailed(context.Background(), err)
		w.log.Error("queuety: held claim not written; its jobs are pending again and run again", "jobs", len(b.held.Jobs), "err", err)
		for _, a := range running {
			a.cancel(fmt.Errorf("%w: the held claim of job %d did not commit", queuetytype.ErrLeaseLost, a.cj.Job.ID))
		}
	}
	for _, r := range completed {
		w.recordOutcome(r, err)
	}
	for _, r := range failed {
		if err != nil {
			w.recordOutcome(r, err)
			continue
		}
		w.finish(r)
	}
}

// claimedLate records a held batch whose jobs the engine claimed because
// its settling came past the bound: the outcomes the normal way, the jobs
// handed back released.
func (w *Worker) claimedLate(b *heldBatch, completed, failed []*engine.Result) {
	w.log.Warn("queuety: held claim settled past its bound; its jobs were claimed and are recorded as usual", "jobs", len(b.held.Jobs))
	if len(b.backs) > 0 {
		backs := make([]*engine.Claimed, 0, len(b.backs))
		for cj := range b.backs {
			backs = append(backs, cj)
		}
		w.handBack(backs)
	}
	for _, r := range completed {
		if !w.batchSuccess(r) {
			w.finish(r)
		}
	}
	for _, r := range failed {
		w.finish(r)
	}
}
