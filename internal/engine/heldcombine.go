package engine

// The held claims of an engine's workers share held transactions: the
// workers that claim at the same time take turns as the combiner's do
// (combine.go), and each turn is one transaction with one locking scan
// for all of them, its rows split among them (their shares). The
// transaction writes once every share has ended (Held.Settle), all
// outcomes in one write per kind and one commit: fewer transactions,
// and no held scan stepping over the rows another held claim of the same
// process holds.
//
// A share cannot keep the transaction open past its bound: Due is closed
// for all shares at once, bound after the scan, and a share not ended half
// a bound later (its worker stalled) is claimed whole, as Claim claims,
// so the others are written and the server's idle timeout (a few bounds)
// is never reached; its worker then records its outcomes the normal way.
// If the transaction does not commit, nothing of any share is written.
//
// Workers whose shares are being written come back to claim at once
// (their slots were taken until the write): a turn that would start alone
// waits a moment for them (heldGather), so the workers of one
// transaction claim the next together rather than drifting into several.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// heldGather is how long after a held transaction's write a turn waits
// for its workers to claim again. A turn waits for the shares being
// written up to a quarter of the bound.
const heldGather = 2 * time.Millisecond

// heldLate is the share of the bound a transaction waits past Due for a
// share to end before it claims that share's jobs.
const heldLate = 2 // bound/heldLate

// heldTx is one held transaction and its shares.
type heldTx struct {
	token     int64
	claimedAt time.Time
	due       chan struct{} // closed bound after the scan
	ended     chan struct{} // one send a share that ends (buffered)
	done      chan struct{} // closed when the transaction has ended
	err       error         // its outcome, set before done is closed
	mu        sync.Mutex
	shares    []*Held
	left      int // shares not ended and not late
	// journal is the held jobs with their attempts before the claim, and
	// journalID its journal row (heldjournal.go), 0 until written.
	journal   []driver.HeldJob
	journalID int64
}

// end ends share h with e and waits for the transaction's outcome.
func (t *heldTx) end(h *Held, e heldEnd) (claimed bool, err error) {
	t.mu.Lock()
	if h.late || h.end != nil {
		t.mu.Unlock()
		<-t.done
		return h.late, t.err
	}
	h.end = &e
	t.left--
	t.mu.Unlock()
	t.ended <- struct{}{}
	<-t.done
	return false, t.err
}

// wait waits until every share has ended, closing due at the bound; the
// shares not ended half a bound later become late. It returns the
// writes of the shares.
func (t *heldTx) wait(bound time.Duration) (all heldEnd) {
	due := time.NewTimer(bound)
	defer due.Stop()
	late := time.NewTimer(bound + bound/heldLate)
	defer late.Stop()
	for waiting := true; waiting; {
		t.mu.Lock()
		waiting = t.left > 0
		t.mu.Unlock()
		if !waiting {
			break
		}
		select {
		case <-t.ended:
		case <-due.C:
			close(t.due)
		case <-late.C:
			t.mu.Lock()
			for _, h := range t.shares {
				if h.end == nil {
					h.late = true
				}
			}
			t.left = 0
			t.mu.Unlock()
			waiting = false
		}
	}
	all.rollback = true
	for _, h := range t.shares {
		switch {
		case h.late:
			all.convert = append(all.convert, h.Jobs...)
		case h.end.rollback:
			continue
		default:
			all.completed = append(all.completed, h.end.completed...)
			all.convert = append(all.convert, h.end.convert...)
		}
		all.rollback = false
	}
	return all
}

// heldReq is one held claim waiting for its turn, and its holder.
type heldReq struct {
	ClaimRequest
	holder any
}

// heldTurn is one held claim waiting for its turn.
type heldTurn = turn[heldReq, *Held]

// heldKey is the state of one set of queues, handlers, bound and idle
// timeout that outlives its turns (under turns.mu).
type heldKey struct {
	// back is the holders of shares being written (true) or written
	// (false, at released) that have not claimed again: a turn that
	// starts waits a moment for them.
	back     map[any]bool
	released time.Time
	// arrived, when set, is signalled when a turn queues or back changes
	// while a turn waits for them.
	arrived chan struct{}
}

// heldCombiner runs the held claims in turns per key (combiner).
type heldCombiner struct {
	turns combiner[heldReq, *Held]
	keys  map[string]*heldKey // under turns.mu
}

// signal wakes the turn that waits on k, if any (under turns.mu).
func (k *heldKey) signal() {
	if k.arrived != nil {
		select {
		case k.arrived <- struct{}{}:
		default:
		}
	}
}

// missing reports whether a holder k waits for is not in queue, and
// whether one of those is still being written (under turns.mu).
func (k *heldKey) missing(queue []*heldTurn) (missing, writing bool) {
	if len(k.back) == 0 {
		return false, false
	}
	queued := make(map[any]bool, len(queue))
	for _, t := range queue {
		queued[t.req.holder] = true
	}
	for h, w := range k.back {
		if !queued[h] {
			missing, writing = true, writing || w
		}
	}
	return missing, writing
}

// claim queues the held claim req and returns its share. A claim that
// queues is no longer waited for (back); the caller that runs a turn
// first gathers the holders coming back.
func (c *heldCombiner) claim(ctx context.Context, e *Engine, hs driver.HeldClaimer, req ClaimRequest, p HeldParams) (*Held, error) {
	name := fmt.Sprintf("%s\x01%s\x01%d\x01%d", strings.Join(req.Queues, "\x00"), strings.Join(req.Handlers, "\x00"), p.Bound, p.Idle)
	holder := p.Holder
	if holder == nil {
		holder = new(int) // a holder of its own
	}
	var k *heldKey
	h := hooks[heldReq, *Held]{
		queued: func() {
			if c.keys == nil {
				c.keys = map[string]*heldKey{}
			}
			if k = c.keys[name]; k == nil {
				k = &heldKey{back: map[any]bool{}}
				c.keys[name] = k
			}
			delete(k.back, holder)
			k.signal()
		},
		lead: func(queue func() []*heldTurn) {
			c.together(k, queue, p.Together)
			c.gather(k, queue, p.Bound/4)
		},
	}
	return c.turns.doWith(name, heldReq{req, holder}, h, takeClaims, func(group []*heldTurn) {
		e.holdTurn(ctx, c, k, hs, group, p)
	})
}

// gather waits for the holders k waits for to be in queue (under
// turns.mu, which it releases while it waits): while one is being
// written, up to most in all; once all are written, up to heldGather
// after the last write. The written ones that did not come are not
// waited for again.
func (c *heldCombiner) gather(k *heldKey, queue func() []*heldTurn, most time.Duration) {
	missing, writing := k.missing(queue())
	if !missing {
		return
	}
	limit := time.Now().Add(most)
	k.arrived = make(chan struct{}, 1)
	for missing {
		until := limit
		if !writing && k.released.Add(heldGather).Before(until) {
			until = k.released.Add(heldGather)
		}
		wait := time.Until(until)
		if wait <= 0 {
			break
		}
		c.turns.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-k.arrived:
		case <-t.C:
		}
		t.Stop()
		c.turns.mu.Lock()
		missing, writing = k.missing(queue())
	}
	k.arrived = nil
	for h, w := range k.back {
		if !w {
			delete(k.back, h)
		}
	}
}

// heldTogetherMax is the longest a turn waits for HeldParams.Together
// claims.
const heldTogetherMax = 30 * time.Second

// together waits (under turns.mu, which it releases while it waits) until
// n claims are queued, heldTogetherMax at most.
func (c *heldCombiner) together(k *heldKey, queue func() []*heldTurn, n int) {
	if n <= 1 {
		return
	}
	limit := time.NewTimer(heldTogetherMax)
	defer limit.Stop()
	k.arrived = make(chan struct{}, 1)
	defer func() { k.arrived = nil }()
	for len(queue()) < n {
		c.turns.mu.Unlock()
		select {
		case <-k.arrived:
		case <-limit.C:
			c.turns.mu.Lock()
			return
		}
		c.turns.mu.Lock()
	}
}

// writing notes that the holders of t's shares are being written: they
// claim again soon.
func (c *heldCombiner) writing(k *heldKey, t *heldTx, holders []any) {
	c.turns.mu.Lock()
	for i, h := range t.shares {
		if h.end != nil && !h.end.rollback {
			k.back[holders[i]] = true
		}
	}
	k.signal()
	c.turns.mu.Unlock()
}

// written notes that t has ended: its holders claim again now.
func (c *heldCombiner) written(k *heldKey, holders []any) {
	c.turns.mu.Lock()
	for _, h := range holders {
		if w, ok := k.back[h]; ok && w {
			k.back[h] = false
		}
	}
	k.released = time.Now()
	k.signal()
	c.turns.mu.Unlock()
}

// holdTurn runs one held transaction for the turns of group: it opens it,
// scans once for all of them and gives each its share; a goroutine then
// waits for the shares to end and writes them.
func (e *Engine) holdTurn(ctx context.Context, c *heldCombiner, k *heldKey, hs driver.HeldClaimer, group []*heldTurn, p HeldParams) {
	all := group[0].req.ClaimRequest
	for _, g := range group[1:] {
		all.Limit += g.req.Limit
	}
	t := &heldTx{token: newClaimToken(), due: make(chan struct{}), done: make(chan struct{})}
	var holders []any
	ready := make(chan error, 1)
	go func() {
		scanned, wrote := false, false
		ctx, woke := e.noteJobs(ctx) // the jobs the outcomes make claimable
		err := hs.InHeldTx(ctx, p.Idle, func(tx driver.HeldTx) error {
			e.heldScan.Lock()
			jobs, err := e.lockHeld(ctx, tx, all, t)
			e.heldScan.Unlock()
			if err != nil {
				return err
			}
			if err := e.journalHeld(ctx, hs, t, p); err != nil {
				return err // nothing runs unjournaled: the claim falls back
			}
			for _, g := range group {
				n := min(g.req.Limit, len(jobs))
				if n == 0 {
					continue
				}
				g.res = &Held{Jobs: jobs[:n:n], tx: t}
				jobs = jobs[n:]
				t.shares = append(t.shares, g.res)
				holders = append(holders, g.req.holder)
			}
			t.left = len(t.shares)
			t.ended = make(chan struct{}, len(t.shares))
			scanned = true
			ready <- nil
			if len(t.shares) == 0 {
				return nil
			}
			end := t.wait(p.Bound)
			if end.rollback || len(end.completed)+len(end.convert) == 0 {
				return errHeldRollback
			}
			c.writing(k, t, holders)
			e.heldWrite.Lock() // until the commit
			wrote = true
			if err := e.settleHeld(ctx, tx, t, end); err != nil {
				return err
			}
			// The journal row goes with the commit. A failed delete fails
			// the transaction: after some errors (a deadlock) the server
			// has rolled it back already, and a commit would write nothing.
			return tx.HeldJournalDelete(ctx, []int64{t.journalID})
		})
		if t.journalID != 0 && (err != nil || !wrote) {
			e.endHeldJournal(ctx, hs, t)
		}
		if wrote {
			e.heldWrite.Unlock()
			if err == nil {
				woke()
			}
		}
		if err == errHeldRollback {
			err = nil
		}
		if !scanned {
			ready <- fmt.Errorf("queuety: held claim: %w", err)
		}
		t.err = err
		c.written(k, holders)
		close(t.done)
	}()
	if err := <-ready; err != nil {
		for _, g := range group {
			g.err = err
		}
	}
}
