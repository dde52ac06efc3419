package admission

// Admission: rate limits per handler, concurrency groups and cost budgets,
// enforced by the claim transaction itself.
//
// A rate limit allows at most Max starts of a handler in any Window
// (a sliding window). Every start a Go claim admits is recorded as a row of
// queuety_go_rate_starts, under the handler's lock row in
// queuety_go_limits, in the claim's transaction; a claim locks the row,
// counts the starts in the window and claims at most the rest. So every
// Go worker of every process shares one window, and two claims never both
// take the last slot. Starts of engines that do not record theirs (Queuety
// PHP, which writes a 'started' log row when it starts a job) are read
// from the logs table and count too, at the second precision of those
// rows. When the window is full the claim works out when its oldest start
// leaves it, and claims skip the handler until then (no claim and
// unclaim loop).
//
// A concurrency group allows at most N processing jobs of the group across
// the fleet (N from the job row's concurrency_limit, as in Queuety, or from
// the worker's configuration); group and queue cost budgets cap the sum of
// the cost_units of processing jobs (Queuety's
// QUEUETY_RESOURCE_GROUP_COST_BUDGETS and _QUEUE_COST_BUDGETS); a worker
// cost budget caps the cost units one worker runs at once. Claims skip
// groups already saturated; the jobs a claim took of a group are then
// counted again under the group's lock row, against the processing jobs of
// every worker (Go or PHP), and those over a limit are handed back in the
// same transaction exactly as Queuety's Queue::unclaim does (pending,
// reserved_at NULL, the attempt given back, available_at unchanged).

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Rate is a rate limit: at most Max starts of a handler in any Window.
type Rate = queuetytype.Rate

// RuntimeRate reads the rate limit a claimed job's payload carries in its
// runtime options (Queuety's step rate_limit), ok false when none.
type RuntimeRate func(payload []byte) (r Rate, ok bool)

// Limits configure a worker's admission. Zero values mean no limit.
type Limits struct {
	// Rates are rate limits by handler name.
	Rates map[string]Rate
	// Groups caps the processing jobs of a concurrency group, fleet-wide.
	// A job row's own concurrency_limit applies too; the smaller wins.
	Groups map[string]int
	// GroupCost caps the cost units of a group's processing jobs.
	GroupCost map[string]int
	// QueueCost caps the cost units of a queue's processing jobs.
	QueueCost map[string]int
	// WorkerCost caps the cost units of the jobs one worker runs at once.
	WorkerCost int
}

// Admission decides what one worker's claims may take (see ClaimRequest).
// It keeps what the worker learned: when each rate-limited handler has a
// free slot again, the rate limits jobs carry in __queuety_runtime, and
// the concurrency groups seen. It is safe for concurrent use.
type Admission struct {
	limits      Limits
	running     func() int  // cost units of the jobs the worker runs
	runtimeRate RuntimeRate // the rate limit a claimed job carries

	mu        sync.Mutex
	learned   map[string]Rate      // rate limits read from claimed jobs
	until     map[string]time.Time // handler -> no free slot before
	groups    map[string]seenGroup // groups with a limit, learned from rows
	foreign   map[string]foreignStarts
	lastPrune map[string]time.Time
}

type seenGroup struct {
	limit  int       // the concurrency_limit last seen on a row
	at     time.Time // when a row was last seen
	used   int       // processing jobs at usedAt
	usedAt time.Time
}

// foreignStarts caches the starts of other engines read from the logs.
type foreignStarts struct {
	read  time.Time
	times []time.Time // created_at, whole seconds, oldest first
}

// Tuning of admission.
const (
	// RatePruneMargin is how long past its window a recorded start is
	// kept: a Go start's 'started' log row, written when its attempt
	// ends, must still find its record, or it would count as another
	// engine's start.
	RatePruneMargin = 5 * time.Second
	// foreignRefreshMax bounds how long starts read from the logs are
	// reused (a quarter of the window, at least 100 ms, at most this).
	foreignRefreshMax = time.Second
	// usageFresh is how long a group's count of processing jobs is trusted
	// to skip the check before a claim, when it left room for a whole
	// claim.
	usageFresh = time.Second
	// groupForget is how long a group learned from a row is checked
	// before each claim after it was last seen.
	groupForget = 10 * time.Minute
	// admitRounds bounds the claims of one transaction when jobs were
	// handed back over a limit.
	admitRounds = 3
)

// New returns the admission of one worker. running reports the cost units
// of the jobs the worker runs (nil when it has no cost budget);
// runtimeRate reads the rate limit a claimed job carries, which the
// admission then keeps for its handler (nil: jobs carry none).
func New(l Limits, running func() int, runtimeRate RuntimeRate) *Admission {
	if running == nil {
		running = func() int { return 0 }
	}
	if runtimeRate == nil {
		runtimeRate = func([]byte) (Rate, bool) { return Rate{}, false }
	}
	return &Admission{limits: l, running: running, runtimeRate: runtimeRate, learned: map[string]Rate{}, until: map[string]time.Time{},
		groups: map[string]seenGroup{}, foreign: map[string]foreignStarts{}, lastPrune: map[string]time.Time{}}
}

// Plain reports that the admission has nothing to hold back: no limit is
// configured and none has been learned from claimed jobs. Claims under a
// plain admission may be combined with other workers' claims.
func (a *Admission) Plain() bool {
	l := a.limits
	if len(l.Rates) > 0 || len(l.Groups) > 0 || len(l.GroupCost) > 0 || len(l.QueueCost) > 0 || l.WorkerCost > 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.learned) == 0 && len(a.groups) == 0
}

// rate returns the rate limit of handler h: the configured one, else one
// learned from a job's __queuety_runtime.
func (a *Admission) rate(h string) (Rate, bool) {
	if r, ok := a.limits.Rates[h]; ok {
		return r, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.learned[h]
	return r, ok
}

// limited reports whether h has no free slot at now.
func (a *Admission) limited(h string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.until[h])
}

func (a *Admission) setUntil(h string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.until[h] = t
}

// NextFree returns the earliest time after now at which a rate-limited
// handler gets a free slot, or zero when none is waiting. An idle worker
// sleeps no longer than that.
func (a *Admission) NextFree(now time.Time) time.Time {
	if a == nil {
		return time.Time{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var next time.Time
	for _, t := range a.until {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// groupLimit is the concurrency limit of group g for a job whose row says
// rowLimit (0 for none): the smaller of the row's and the configured one.
func (a *Admission) groupLimit(g string, rowLimit int) int {
	n := a.limits.Groups[g]
	if rowLimit > 0 && (n == 0 || rowLimit < n) {
		n = rowLimit
	}
	return n
}

// knownGroups are the groups checked before a claim of up to n jobs:
// configured ones and those seen on rows with a limit recently, except
// groups with no cost budget whose count, taken within usageFresh, left
// room for n more.
func (a *Admission) knownGroups(now time.Time, n int) []string {
	set := map[string]bool{}
	for g := range a.limits.Groups {
		set[g] = true
	}
	for g := range a.limits.GroupCost {
		set[g] = true
	}
	a.mu.Lock()
	for g, s := range a.groups {
		if now.Sub(s.at) > groupForget {
			delete(a.groups, g)
			continue
		}
		set[g] = true
	}
	for g := range set {
		s, ok := a.groups[g]
		limit := a.groupLimit(g, s.limit) // reads only the configuration
		if ok && a.limits.GroupCost[g] == 0 && limit > 0 && !s.usedAt.IsZero() && now.Sub(s.usedAt) < usageFresh && s.used+n < limit {
			delete(set, g)
		}
	}
	a.mu.Unlock()
	return sortedKeys(set)
}

// noteUsage keeps the count of group g's processing jobs taken at now.
func (a *Admission) noteUsage(g string, used int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.groups[g]; ok {
		s.used, s.usedAt = used, now
		a.groups[g] = s
	}
}

// learnedLimit is the limit last seen on a row of group g.
func (a *Admission) learnedLimit(g string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.groups[g].limit
}

func (a *Admission) seeGroup(g string, limit int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.groups[g]
	s.limit, s.at = limit, now
	a.groups[g] = s
}

// filter is what a claim may take: the handlers without a full window,
// the groups already saturated, and the cost cap per queue.
type filter struct {
	handlers []string
	rated    []string // rate-limited handlers among req.Handlers, not known to be full
	exclude  []string
	queueCap map[string]int // queue -> cost units left (queues with a budget)
}

// prepare splits the handlers and checks the known groups and budgeted
// queues (one read, no locks).
func (a *Admission) prepare(ctx context.Context, tx driver.Tx, queues, handlers []string, now time.Time, n int) (*filter, error) {
	f := &filter{queueCap: map[string]int{}}
	for _, h := range handlers {
		if _, ok := a.rate(h); !ok {
			f.handlers = append(f.handlers, h)
		} else if !a.limited(h, now) {
			f.rated = append(f.rated, h)
		}
	}
	sort.Strings(f.rated)
	groups := a.knownGroups(now, n)
	var budgeted []string
	for _, q := range queues {
		if a.limits.QueueCost[q] > 0 {
			budgeted = append(budgeted, q)
		}
	}
	if len(groups) == 0 && len(budgeted) == 0 {
		return f, nil
	}
	u, err := tx.JobUsage(ctx, groups, budgeted)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		limit := a.groupLimit(g, a.learnedLimit(g))
		c := u.Groups[g]
		a.noteUsage(g, c.Jobs, now)
		if (limit > 0 && c.Jobs >= limit) || (a.limits.GroupCost[g] > 0 && c.Cost >= a.limits.GroupCost[g]) {
			f.exclude = append(f.exclude, g)
		}
	}
	for _, q := range budgeted {
		f.queueCap[q] = a.limits.QueueCost[q] - u.Queues[q].Cost
	}
	return f, nil
}

// costCap is the largest cost a job of queue q may have to be claimed now
// (ok false: no cap), given cost units already claimed in this
// transaction: in all (for the worker budget) and per queue.
func (a *Admission) costCap(f *filter, q string, claimed int, claimedIn map[string]int) (int, bool) {
	capped, n := false, 0
	if a.limits.WorkerCost > 0 {
		capped, n = true, a.limits.WorkerCost-a.running()-claimed
	}
	if left, ok := f.queueCap[q]; ok {
		left -= claimedIn[q]
		if !capped || left < n {
			n = left
		}
		capped = true
	}
	return max(n, 0), capped
}

// HasDue reports, in tx at now, whether a claim with this admission would
// find a job: a due job of queues and handlers, without the handlers whose
// window is full and the groups that are saturated.
func (a *Admission) HasDue(ctx context.Context, tx driver.Tx, queues, handlers []string, now time.Time) (bool, error) {
	f, err := a.prepare(ctx, tx, queues, handlers, now, 1)
	if err != nil {
		return false, err
	}
	hs := append(slices.Clone(f.handlers), f.rated...)
	for _, q := range queues {
		p := driver.ClaimParams{Queue: q, Handlers: hs, Now: now, ExcludeGroups: f.exclude}
		p.MaxCost, p.CapCost = a.costCap(f, q, 0, nil)
		if len(hs) == 0 {
			return false, nil
		}
		if due, err := tx.JobHasDue(ctx, p); err != nil || due {
			return due, err
		}
	}
	return false, nil
}

// AllowsEager reports whether jobs may be handed to a worker with this
// admission without a claim: it configures no limit (a nil admission
// allows them).
func (a *Admission) AllowsEager() bool {
	if a == nil {
		return true
	}
	l := a.limits
	return len(l.Rates) == 0 && len(l.Groups) == 0 && len(l.GroupCost) == 0 && len(l.QueueCost) == 0 && l.WorkerCost <= 0
}

// LearnedRate reports whether the admission has a rate limit for handler
// h, configured or learned from a claimed job (false for a nil
// admission).
func (a *Admission) LearnedRate(h string) bool {
	if a == nil {
		return false
	}
	_, ok := a.rate(h)
	return ok
}

// admitRun is the state of one claim transaction's admission.
type admitRun struct {
	a       *Admission
	tx      driver.Tx
	now     time.Time // the claim's time: rate windows are counted and starts recorded at it
	f       *filter
	budgets map[string]int // rate-limited handler -> starts left in its window
	locked  map[string]bool
	out     []*driver.Job
	cost    int            // cost units claimed (admitted) so far
	costIn  map[string]int // ... per queue
}

// Request is what one claim asks for.
type Request struct {
	Queues   []string // tried in order; earlier queues win
	Handlers []string // handler names the worker can run
	Limit    int      // at most this many jobs
}

// Claim takes up to req.Limit jobs within the limits, in the claim's
// transaction tx, at now, with the claim token token: rows over a limit
// are handed back in tx as Queuety's Queue::unclaim does.
func (a *Admission) Claim(ctx context.Context, tx driver.Tx, req Request, now time.Time, token int64) ([]*driver.Job, error) {
	f, err := a.prepare(ctx, tx, req.Queues, req.Handlers, now, req.Limit)
	if err != nil {
		return nil, err
	}
	r := &admitRun{a: a, tx: tx, now: now, f: f, budgets: map[string]int{}, locked: map[string]bool{}, costIn: map[string]int{}}
	// Rate limits first, in handler order: lock, count, keep the budget.
	for _, h := range f.rated {
		if err := r.lockRate(ctx, h); err != nil {
			return nil, err
		}
	}
	for round := 0; round < admitRounds && len(r.out) < req.Limit; round++ {
		got, err := r.claimRound(ctx, req, token)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			break
		}
		rejected, err := r.admit(ctx, got)
		if err != nil {
			return nil, err
		}
		if len(rejected) == 0 {
			break
		}
		if err := tx.JobUnclaim(ctx, jobIDsOf(rejected)); err != nil {
			return nil, err
		}
	}
	if err := r.recordStarts(ctx); err != nil {
		return nil, err
	}
	return r.out, nil
}

// lockRate locks handler h's rate row and computes its budget; a full
// window marks h limited until its next free slot.
//
// The window is counted, and the starts recorded (recordStarts), at the
// claim's time, read before the lock. Claims may take the lock in another
// order than their times, so a claim counts every recorded start after its
// time less the window, those recorded with later times by claims that
// held the lock before it included: in any window, the claim that took
// the lock last counted all the other starts, and no window holds more
// than Max. Reading the time early keeps lock waits out of the window's
// pace.
func (r *admitRun) lockRate(ctx context.Context, h string) error {
	rate, _ := r.a.rate(h)
	if err := r.tx.LimitLock(ctx, driver.LimitRate, h, r.now); err != nil {
		return err
	}
	r.locked[driver.LimitRate+":"+h] = true
	now := r.now
	budget, next, err := r.a.rateBudget(ctx, r.tx, h, rate, now)
	if err != nil {
		return err
	}
	if budget <= 0 {
		r.a.setUntil(h, next)
	}
	r.budgets[h] = max(budget, 0)
	return r.a.prune(ctx, r.tx, h, rate, now)
}

// claimRound claims, queue by queue, the rate-limited handlers' jobs
// (each within its budget) and then the other handlers' jobs.
func (r *admitRun) claimRound(ctx context.Context, req Request, token int64) ([]*driver.Job, error) {
	var got []*driver.Job
	claimed, claimedIn := r.cost, maps(r.costIn)
	take := func(p driver.ClaimParams) error {
		if p.Limit <= 0 || len(p.Handlers) == 0 {
			return nil
		}
		jobs, err := r.tx.JobClaim(ctx, p)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			claimed += j.CostUnits
			claimedIn[j.Queue] += j.CostUnits
		}
		got = append(got, jobs...)
		return nil
	}
	for _, q := range req.Queues {
		for _, h := range r.f.rated {
			p := r.params(q, []string{h}, min(req.Limit-len(r.out)-len(got), r.budgets[h]), token, claimed, claimedIn)
			before := len(got)
			if err := take(p); err != nil {
				return nil, err
			}
			r.budgets[h] -= len(got) - before
		}
		p := r.params(q, r.f.handlers, req.Limit-len(r.out)-len(got), token, claimed, claimedIn)
		if err := take(p); err != nil {
			return nil, err
		}
		if len(r.out)+len(got) >= req.Limit {
			break
		}
	}
	return got, nil
}

func (r *admitRun) params(q string, handlers []string, limit int, token int64, claimed int, claimedIn map[string]int) driver.ClaimParams {
	p := driver.ClaimParams{Queue: q, Handlers: handlers, Limit: limit, Now: r.now, Token: token, ExcludeGroups: r.f.exclude}
	p.MaxCost, p.CapCost = r.a.costCap(r.f, q, claimed, claimedIn)
	return p
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func jobIDsOf(jobs []*driver.Job) []int64 {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// recordStarts records the admitted starts of rate-limited handlers.
func (r *admitRun) recordStarts(ctx context.Context) error {
	var starts []driver.RateStart
	at := r.now
	for _, j := range r.out {
		if _, ok := r.a.rate(j.Handler); ok {
			starts = append(starts, driver.RateStart{Handler: j.Handler, JobID: j.ID, Attempt: j.Attempts, StartedAt: at})
		}
	}
	return r.tx.RateStartInsert(ctx, starts)
}
