package engine

// Wake-ups for rows a commit makes claimable without inserting them: a
// freed concurrency group slot, and jobs whose dependency completed. (A
// job handed back, or retried at once, is noted where it is written; see
// Release and failAttempt.)

import (
	"context"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// freedSlots notes, for an attempt recorded (completed, failed, buried or
// handed back), the concurrency group slot it frees: a job of the group
// that the limit held back may be claimable now. Which jobs those are is
// not read, so every idle worker is woken.
func freedSlots(ctx context.Context, r *Result) {
	if j := r.Claimed.Job; j.ConcurrencyGroup != "" {
		jobnote.Any(ctx)
	}
}

// completedJobs notes the group slots that the plain jobs completed by
// CompleteJobs free, and looks, after the commit, for the pending jobs
// that depend on them (wakeDependents).
func (e *Engine) completedJobs(ctx context.Context, results []*Result, errs []error) {
	var ids []int64
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		freedSlots(ctx, r)
		ids = append(ids, r.Claimed.Job.ID)
	}
	e.wakeDependents(ids)
}

// dependentWake reads, after jobs completed, which pending jobs depended
// on them, one read in flight at a time and one per dependentsGap at most
// (the ids of completions meanwhile are read together next), so recording
// a completion never waits for it and a stream of completions costs the
// database a few reads a second, not one per completion.
type dependentWake struct {
	mu      sync.Mutex
	ids     []int64
	running bool
}

// dependentsChunk caps the ids one read of the dependents names, and
// dependentsGap is the least time between the starts of two reads.
const (
	dependentsChunk = 500
	dependentsGap   = 5 * time.Millisecond
)

// wakeDependents wakes idle workers, in the background, for the pending
// jobs that depend on ids (now completed) and are claimable now, on a
// store that can read them (driver.DependentReader).
func (e *Engine) wakeDependents(ids []int64) {
	r, ok := e.store.(driver.DependentReader)
	if !ok || len(ids) == 0 {
		return
	}
	d := &e.dependents
	d.mu.Lock()
	d.ids = append(d.ids, ids...)
	if d.running {
		d.mu.Unlock()
		return
	}
	d.running = true
	d.mu.Unlock()
	go func() {
		var last time.Time
		for {
			if wait := time.Until(last.Add(dependentsGap)); wait > 0 {
				time.Sleep(wait)
			}
			d.mu.Lock()
			ids := d.ids[:min(len(d.ids), dependentsChunk)]
			d.ids = d.ids[len(ids):]
			if len(ids) == 0 {
				d.ids = nil
				d.running = false
				d.mu.Unlock()
				return
			}
			d.mu.Unlock()
			last = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			jobs, err := r.JobDependents(ctx, ids)
			cancel()
			if err != nil {
				e.log.Debug("queuety: read the jobs waiting on completed jobs; idle workers find them by polling", "err", err)
				continue
			}
			if len(jobs) > 0 {
				nctx, n := jobnote.With(context.Background())
				jobnote.Ready(nctx, jobs...)
				e.wakeNoted(n)
			}
		}
	}()
}
