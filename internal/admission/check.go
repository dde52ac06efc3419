package admission

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// rateBudget returns how many more starts handler h may have at now, and
// when the window is full, when its next slot frees. The caller holds h's
// lock.
func (a *Admission) rateBudget(ctx context.Context, tx driver.Tx, h string, rate Rate, now time.Time) (int, time.Time, error) {
	foreign, err := a.foreignStarts(ctx, tx, h, rate, now)
	if err != nil {
		return 0, time.Time{}, err
	}
	return Budget(ctx, tx, h, foreign, rate, now)
}

// Budget returns how many more starts the rate window of key admits at
// now, and, when it is full, when its next slot frees: when the oldest
// start beyond the limit leaves the window. It counts the starts recorded
// under key (driver.LimitTx.RateStartCount, exact times) and foreign, the
// whole-second stamps of starts other engines logged (ForeignStarts):
// a foreign start stamped s happened in [s, s+1s), so it counts as if at
// s+1s, the latest it can have been. The caller holds key's limit lock.
//
// The claim's rate limits and the RateLimited middleware's slots both
// count with it, so the two agree on what a window holds.
func Budget(ctx context.Context, tx driver.Tx, key string, foreign []time.Time, rate Rate, now time.Time) (int, time.Time, error) {
	since := now.Add(-rate.Window)
	own, err := tx.RateStartCount(ctx, key, since)
	if err != nil {
		return 0, time.Time{}, err
	}
	var ends []time.Time
	for _, s := range foreign {
		if end := s.Add(time.Second); end.After(since) {
			ends = append(ends, end)
		}
	}
	total := own + len(ends)
	if total < rate.Max {
		return rate.Max - total, time.Time{}, nil
	}
	k := total - rate.Max // 0-based: the start whose leaving frees a slot
	times, err := tx.RateStartTimes(ctx, key, since, k+1)
	if err != nil {
		return 0, time.Time{}, err
	}
	all := append(times, ends...)
	sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	next := now.Add(rate.Window)
	if k < len(all) {
		next = all[k].Add(rate.Window)
	}
	return 0, next, nil
}

// ForeignStarts reads the whole-second stamps of handler's starts that
// other engines logged and that can still count in the rate window ending
// at now (s > now - window - 1s, see Budget), oldest first and at most
// rate.Max+1 of them.
func ForeignStarts(ctx context.Context, tx driver.Tx, handler string, rate Rate, now time.Time) ([]time.Time, error) {
	since := now.Add(-rate.Window - time.Second).UTC().Truncate(time.Second).Add(time.Second)
	return tx.RateForeignStarts(ctx, handler, since, rate.Max+1)
}

// foreignStarts returns the starts of handler h that other engines wrote
// to the logs in the window (see driver.LimitTx.RateForeignStarts),
// reusing the last read for up to a quarter of the window (at least
// 100 ms, at most a second).
func (a *Admission) foreignStarts(ctx context.Context, tx driver.Tx, h string, rate Rate, now time.Time) ([]time.Time, error) {
	refresh := min(max(rate.Window/4, 100*time.Millisecond), foreignRefreshMax)
	a.mu.Lock()
	c, ok := a.foreign[h]
	a.mu.Unlock()
	if ok && !now.Before(c.read) && now.Sub(c.read) < refresh {
		return c.times, nil
	}
	times, err := ForeignStarts(ctx, tx, h, rate, now)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.foreign[h] = foreignStarts{read: now, times: times}
	a.mu.Unlock()
	return times, nil
}

// prune deletes handler h's recorded starts that left the window more
// than RatePruneMargin ago, at most once per window (or second). The
// caller holds h's lock.
func (a *Admission) prune(ctx context.Context, tx driver.Tx, h string, rate Rate, now time.Time) error {
	a.mu.Lock()
	due := now.Sub(a.lastPrune[h]) >= max(rate.Window, time.Second)
	if due {
		a.lastPrune[h] = now
	}
	a.mu.Unlock()
	if !due {
		return nil
	}
	_, err := tx.RateStartDelete(ctx, h, now.Add(-rate.Window-RatePruneMargin), 10000)
	return err
}

// learn keeps a rate limit read from a job's __queuety_runtime, as
// Queuety's Worker::register_job_rate_limit does: the first one seen for a
// handler stays. It reports whether h had none.
func (a *Admission) learn(h string, r Rate) bool {
	if _, ok := a.limits.Rates[h]; ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.learned[h]; ok {
		return false
	}
	a.learned[h] = r
	return true
}

// lockKey takes a limit's lock once per transaction.
func (r *admitRun) lockKey(ctx context.Context, kind, name string) error {
	k := kind + ":" + name
	if r.locked[k] {
		return nil
	}
	if err := r.tx.LimitLock(ctx, kind, name, r.now); err != nil {
		return err
	}
	r.locked[k] = true
	return nil
}

// admit checks the jobs of one claim round, in claim order, against the
// rate limits learned from them, the group limits and the cost budgets,
// under the locks of the groups and queues involved, and keeps the admitted
// ones in r.out. It returns the others, for the caller to unclaim.
func (r *admitRun) admit(ctx context.Context, got []*driver.Job) ([]*driver.Job, error) {
	a, lim := r.a, r.a.limits
	// Rate limits carried by the jobs (Queuety's step rate_limit).
	var learnedNow []string
	for _, j := range got {
		if _, ok := a.rate(j.Handler); ok {
			continue
		}
		if rt, ok := a.runtimeRate(j.Payload); ok && a.learn(j.Handler, rt) {
			learnedNow = append(learnedNow, j.Handler)
		}
	}
	sort.Strings(learnedNow)
	for _, h := range learnedNow {
		if err := r.lockRate(ctx, h); err != nil {
			return nil, err
		}
		r.f.handlers = slices.DeleteFunc(r.f.handlers, func(x string) bool { return x == h })
		r.f.rated = append(r.f.rated, h)
	}
	// Groups and queues to count under their locks.
	groupSet, queueSet := map[string]bool{}, map[string]bool{}
	for _, j := range got {
		if g := j.ConcurrencyGroup; g != "" {
			if j.ConcurrencyLimit > 0 {
				a.seeGroup(g, j.ConcurrencyLimit, r.now)
			}
			if a.groupLimit(g, j.ConcurrencyLimit) > 0 || lim.GroupCost[g] > 0 {
				groupSet[g] = true
			}
		}
		if lim.QueueCost[j.Queue] > 0 && j.CostUnits > 0 {
			queueSet[j.Queue] = true
		}
	}
	groups, queues := sortedKeys(groupSet), sortedKeys(queueSet)
	for _, g := range groups {
		if err := r.lockKey(ctx, driver.LimitGroup, g); err != nil {
			return nil, err
		}
	}
	for _, q := range queues {
		if err := r.lockKey(ctx, driver.LimitQueue, q); err != nil {
			return nil, err
		}
	}
	// What the other workers hold: the processing jobs counted after the
	// locks, less this transaction's own.
	others := driver.Usage{Groups: map[string]driver.UsageCount{}, Queues: map[string]driver.UsageCount{}}
	if len(groups)+len(queues) > 0 {
		u, err := r.tx.JobUsage(ctx, groups, queues)
		if err != nil {
			return nil, err
		}
		others = u
		for _, j := range append(slices.Clone(r.out), got...) {
			sub(others.Groups, j.ConcurrencyGroup, j.CostUnits)
			sub(others.Queues, j.Queue, j.CostUnits)
		}
		for _, q := range queues {
			r.f.queueCap[q] = lim.QueueCost[q] - others.Queues[q].Cost
		}
		for _, g := range groups {
			a.noteUsage(g, u.Groups[g].Jobs, r.now)
		}
	}
	held := driver.Usage{Groups: map[string]driver.UsageCount{}, Queues: map[string]driver.UsageCount{}}
	for _, j := range r.out {
		add(held.Groups, j.ConcurrencyGroup, j.CostUnits)
		add(held.Queues, j.Queue, j.CostUnits)
	}
	learned := map[string]bool{}
	for _, h := range learnedNow {
		learned[h] = true
	}
	var rejected []*driver.Job
	for _, j := range got {
		g, q, cost := j.ConcurrencyGroup, j.Queue, j.CostUnits
		ok := true
		if learned[j.Handler] && r.budgets[j.Handler] <= 0 {
			ok = false
		}
		if limit := a.groupLimit(g, j.ConcurrencyLimit); ok && g != "" && limit > 0 && others.Groups[g].Jobs+held.Groups[g].Jobs >= limit {
			ok = false
			r.exclude(g)
		}
		if b := lim.QueueCost[q]; ok && b > 0 && cost > 0 && others.Queues[q].Cost+held.Queues[q].Cost+cost > b {
			ok = false
		}
		if b := lim.GroupCost[g]; ok && g != "" && b > 0 && cost > 0 && others.Groups[g].Cost+held.Groups[g].Cost+cost > b {
			ok = false
			if others.Groups[g].Cost+held.Groups[g].Cost >= b {
				r.exclude(g)
			}
		}
		if ok && lim.WorkerCost > 0 && cost > 0 && a.running()+r.cost+cost > lim.WorkerCost {
			ok = false
		}
		if !ok {
			if _, rated := a.rate(j.Handler); rated && !learned[j.Handler] {
				r.budgets[j.Handler]++ // claimed within its budget; give the slot back
			}
			rejected = append(rejected, j)
			continue
		}
		if learned[j.Handler] {
			r.budgets[j.Handler]--
		}
		add(held.Groups, g, cost)
		add(held.Queues, q, cost)
		r.cost += cost
		r.costIn[q] += cost
		r.out = append(r.out, j)
	}
	return rejected, nil
}

// exclude skips group g in the claim's later rounds.
func (r *admitRun) exclude(g string) {
	if !slices.Contains(r.f.exclude, g) {
		r.f.exclude = append(r.f.exclude, g)
	}
}

func add(m map[string]driver.UsageCount, k string, cost int) {
	if k == "" {
		return
	}
	c := m[k]
	c.Jobs++
	c.Cost += cost
	m[k] = c
}

func sub(m map[string]driver.UsageCount, k string, cost int) {
	if k == "" {
		return
	}
	c, ok := m[k]
	if !ok {
		return
	}
	c.Jobs = max(c.Jobs-1, 0)
	c.Cost = max(c.Cost-cost, 0)
	m[k] = c
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
