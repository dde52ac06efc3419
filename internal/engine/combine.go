package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Workers of one engine that claim, or record completions, at the same
// time take turns, and each turn serves everything that queued up while
// the one before it ran: one transaction instead of one per worker. The
// first caller runs at once; callers arriving while a transaction runs
// wait, and when it ends the first of them runs one transaction for all of
// them and hands the results out. So a single worker's claims and
// completions run as before, and N workers of one process keep one claim
// and one completion transaction in flight rather than N of each, with
// batches N times larger: fewer transactions, and no claim skipping the
// rows another claim of the same process has locked. For-each branch
// results are combined the same way (branchCombiner), the branches of
// one workflow merged into one group.

// maxCombinedClaim caps the jobs one combined claim takes.
const maxCombinedClaim = 1000

// turn is one caller waiting in a combiner: it is either served by the
// caller running the transaction (done closed, lead false) or asked to
// run the next one itself (done closed, lead true).
type turn[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	lead bool
	done chan struct{}
}

// combiner runs calls in turns per key.
type combiner[Req, Res any] struct {
	mu      sync.Mutex
	busy    map[string]bool
	waiting map[string][]*turn[Req, Res]
}

// hooks are optional calls a combiner makes for one call, with c.mu held.
type hooks[Req, Res any] struct {
	// queued is called when the call has queued, before it waits for
	// its turn.
	queued func()
	// lead is called by the caller that runs the next turn, before it
	// takes the turn's calls. It may unlock c.mu while it waits, and
	// locks it again before it returns; queue returns the calls queued
	// by then, the caller's first.
	lead func(queue func() []*turn[Req, Res])
}

// do queues req under key and returns its result. run executes one turn:
// it gets every queued call (the caller's first) and sets res and err on
// each; take limits how many queued calls one turn serves.
func (c *combiner[Req, Res]) do(key string, req Req, take func([]*turn[Req, Res]) int, run func([]*turn[Req, Res])) (Res, error) {
	return c.doWith(key, req, hooks[Req, Res]{}, take, run)
}

// doWith is do with the hooks h.
func (c *combiner[Req, Res]) doWith(key string, req Req, h hooks[Req, Res], take func([]*turn[Req, Res]) int, run func([]*turn[Req, Res])) (Res, error) {
	me := &turn[Req, Res]{req: req, done: make(chan struct{})}
	c.mu.Lock()
	if c.busy == nil {
		c.busy, c.waiting = map[string]bool{}, map[string][]*turn[Req, Res]{}
	}
	c.waiting[key] = append(c.waiting[key], me)
	if h.queued != nil {
		h.queued()
	}
	if c.busy[key] {
		c.mu.Unlock()
		<-me.done
		if !me.lead {
			return me.res, me.err
		}
		c.mu.Lock()
	} else {
		c.busy[key] = true
	}
	// This caller runs the turn: itself first, then those queued behind.
	if h.lead != nil {
		h.lead(func() []*turn[Req, Res] { return c.waiting[key] })
	}
	queued := c.waiting[key]
	n := take(queued)
	group := queued[:n:n]
	c.waiting[key] = queued[n:]
	c.mu.Unlock()

	run(group)

	c.mu.Lock()
	if next := c.waiting[key]; len(next) > 0 {
		next[0].lead = true
		close(next[0].done)
	} else {
		delete(c.waiting, key)
		delete(c.busy, key)
	}
	c.mu.Unlock()
	for _, t := range group[1:] {
		close(t.done)
	}
	return me.res, me.err
}

// claimCombiner combines claims for the same queues and handlers.
type claimCombiner struct {
	c combiner[ClaimRequest, []*Claimed]
}

// claim claims req, in one transaction with the claims of the same queues
// and handlers queued meanwhile.
func (cc *claimCombiner) claim(ctx context.Context, e *Engine, req ClaimRequest) ([]*Claimed, error) {
	key := strings.Join(req.Queues, "\x00") + "\x01" + strings.Join(req.Handlers, "\x00")
	return cc.c.do(key, req, takeClaims, func(ts []*turn[ClaimRequest, []*Claimed]) {
		all := ts[0].req
		for _, t := range ts[1:] {
			all.Limit += t.req.Limit
		}
		jobs, err := e.claimOnce(ctx, all)
		for _, t := range ts {
			t.err = err
			n := min(t.req.Limit, len(jobs))
			t.res, jobs = jobs[:n:n], jobs[n:]
		}
	})
}

// claimer is a combined claim's request: ClaimRequest, or a struct that
// embeds it.
type claimer interface{ claimRequest() ClaimRequest }

// claimRequest returns r.
func (r ClaimRequest) claimRequest() ClaimRequest { return r }

// takeClaims is the take of combined claims: the first queued claim, then
// those after it while their limits add up to at most maxCombinedClaim
// and their admissions are plain (a claim under limits runs alone).
func takeClaims[Req claimer, Res any](ts []*turn[Req, Res]) int {
	n, total := 0, 0
	for _, t := range ts {
		r := t.req.claimRequest()
		if n > 0 && (total+r.Limit > maxCombinedClaim || !(r.Admission == nil || r.Admission.Plain())) {
			break
		}
		n, total = n+1, total+r.Limit
	}
	return n
}

// completionCombiner combines plain-job completions.
type completionCombiner struct {
	c combiner[[]*Result, []error]
}

func (cc *completionCombiner) complete(ctx context.Context, e *Engine, results []*Result) ([]error, error) {
	all := func(ts []*turn[[]*Result, []error]) int { return len(ts) }
	return cc.c.do("", results, all, func(ts []*turn[[]*Result, []error]) {
		var rs []*Result
		for _, t := range ts {
			rs = append(rs, t.req...)
		}
		errs, err := e.completeJobsOnce(ctx, rs)
		for _, t := range ts {
			t.err = err
			if err == nil {
				t.res, errs = errs[:len(t.req):len(t.req)], errs[len(t.req):]
			}
		}
	})
}

// branchCombiner combines for-each branch completions: the groups that
// workers record at the same time go into one transaction, and the
// groups of one workflow from several workers become one group, so a
// workflow's row is locked, and its state decoded and written, once a
// turn rather than once a worker. The branch jobs a placeholder's
// expansion inserts are handed off (eager.go) to the worker whose
// groups held the placeholder, within that worker's offer: each worker
// gets back only jobs handed to it, never more than its free slots.
type branchCombiner struct {
	c combiner[branchRequest, []*Claimed]
}

// branchRequest is one worker's branch groups and its offer (nil: it
// takes nothing).
type branchRequest struct {
	groups []*advance.BranchGroup
	offer  *EagerOffer
}

func (bc *branchCombiner) complete(ctx context.Context, e *Engine, groups []*advance.BranchGroup, offer *EagerOffer) ([]*Claimed, error) {
	all := func(ts []*turn[branchRequest, []*Claimed]) int { return len(ts) }
	return bc.c.do("", branchRequest{groups, offer}, all, func(ts []*turn[branchRequest, []*Claimed]) {
		type part struct {
			g, into *advance.BranchGroup
			off     int
		}
		var merged []*advance.BranchGroup
		var parts []part
		byWF := map[int64]*advance.BranchGroup{}
		owner := map[*advance.BranchGroup]int{} // merged group: the turn whose group opened it
		for k, t := range ts {
			for _, g := range t.req.groups {
				id := g.Attempts[0].Job().WorkflowID
				m := byWF[id]
				if m == nil {
					m = &advance.BranchGroup{}
					byWF[id] = m
					owner[m] = k
					merged = append(merged, m)
				}
				parts = append(parts, part{g: g, into: m, off: len(m.Attempts)})
				m.Attempts = append(m.Attempts, g.Attempts...)
				m.Outputs = append(m.Outputs, g.Outputs...)
			}
		}
		var handed map[*advance.BranchGroup][]*Claimed
		var handoff advance.BranchHandoff
		if anyOffer(ts) {
			handoff = func(ctx context.Context, tx driver.Tx, exps []advance.Expansion, payloadDoc func(*driver.Job) *phpjson.Object, now time.Time) error {
				var err error
				handed, err = e.handOffExpansions(ctx, tx, ts, owner, exps, payloadDoc, now)
				return err
			}
		}
		err := e.flow.CompleteBranchGroups(ctx, merged, handoff)
		for _, p := range parts {
			p.g.Fallback = p.into.Fallback
			if err == nil && !p.into.Fallback {
				p.g.Errs = p.into.Errs[p.off : p.off+len(p.g.Attempts)]
			}
		}
		for _, t := range ts {
			t.err, t.res = err, nil
		}
		if err != nil {
			return
		}
		// Only what the committed transaction took counts: the groups
		// it expanded were recorded by it.
		for _, m := range merged {
			if cs := handed[m]; len(cs) > 0 && !m.Fallback && m.Errs[0] == nil {
				t := ts[owner[m]]
				t.res = append(t.res, cs...)
			}
		}
	})
}

// anyOffer reports whether a worker of ts offered slots.
func anyOffer(ts []*turn[branchRequest, []*Claimed]) bool {
	for _, t := range ts {
		if t.req.offer != nil && t.req.offer.Slots > 0 {
			return true
		}
	}
	return false
}

// handOffExpansions takes, in tx, the branch jobs of exps that the
// workers of ts can start now, each expansion's for the worker of its
// group (owner) within that worker's offer, and returns them by group.
func (e *Engine) handOffExpansions(ctx context.Context, tx driver.Tx, ts []*turn[branchRequest, []*Claimed], owner map[*advance.BranchGroup]int,
	exps []advance.Expansion, payloadDoc func(*driver.Job) *phpjson.Object, now time.Time) (map[*advance.BranchGroup][]*Claimed, error) {
	pickers := make([]*eagerPicker, len(ts))
	for k, t := range ts {
		pickers[k] = newEagerPicker(t.req.offer)
	}
	from := map[*driver.Job]*advance.BranchGroup{}
	for _, x := range exps {
		p := pickers[owner[x.Group]]
		if p == nil { // that worker offered nothing
			continue
		}
		n := len(p.cands)
		p.note(x.Workflow, x.State, x.Steps, nil, x.Jobs, payloadDoc)
		for _, c := range p.cands[n:] {
			from[c.job] = x.Group
		}
	}
	out := map[*advance.BranchGroup][]*Claimed{}
	for _, p := range pickers {
		cs, err := p.claim(ctx, tx, now)
		if err != nil {
			return nil, err
		}
		for _, cj := range cs {
			g := from[cj.Job]
			out[g] = append(out[g], cj)
		}
	}
	return out, nil
}
