package engine

// Wake-ups for jobs that wait on another (depends_on: a chain's next job,
// a job dispatched with DependsOn, on a plain job or on a workflow step's
// job): the completion that makes them claimable (a plain job's, or a step
// job's as its workflow advances) wakes idle workers for them, in this
// process and the others, as for any job a commit makes claimable.
//
// Finding them takes a read of the completed jobs' dependents, and most
// jobs have none: the read runs in the completion's transaction, from the
// store's completion itself (it tells the job note, whose hook the engine
// set: dependentsCompleted), and only when one of the completed jobs may
// have one. A job may have a dependent
// only if its id is at most the highest depends_on of the jobs table (the
// horizon), which the store reads from one end of its depends_on index
// (driver.DependentsTx). The process keeps the horizon per store and
// raises it without a read when one of its engines inserts a job with a
// depends_on (before that insert commits) or claims one (a chain's job
// most likely has a dependent too); it reads the store's again, in a
// completion's transaction, once depReadMaxAge has passed, or depReadGap
// after another process told it of new jobs (remoteWake). A plain drain of
// jobs newer than every dependency reads nothing but that, about once a
// second. A dependent inserted by another process and missed in between
// is found by a poll, as before.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// How often the horizon is read again from the store: at most once per
// depReadGap after another process committed jobs, and otherwise once
// per depReadMaxAge.
const (
	depReadGap    = 20 * time.Millisecond
	depReadMaxAge = time.Second
)

// depGate is the process's horizon of one store (see above).
type depGate struct {
	horizon atomic.Int64 // the highest depends_on known
	readAt  atomic.Int64 // when the store's horizon was last read (depClock), 0: never
	heard   atomic.Bool  // another process committed jobs since that read
	// now is the gate's clock: depClock, or a test's.
	now func() int64
	// raiser is raise bound once, so that noting jobs allocates no
	// method value.
	raiser func(id int64)
}

// newDepGate returns a gate that has read nothing yet, on depClock.
func newDepGate() *depGate {
	g := &depGate{now: depClock}
	g.raiser = g.raise
	return g
}

// depGates are the process's gates by Config.WakeKey, shared as the wake
// hubs are.
var depGates sync.Map // string -> *depGate

// gateFor returns the shared gate of key, or a gate of its own when key
// is "".
func gateFor(key string) *depGate {
	if key == "" {
		return newDepGate()
	}
	if g, ok := depGates.Load(key); ok {
		return g.(*depGate)
	}
	g, _ := depGates.LoadOrStore(key, newDepGate())
	return g.(*depGate)
}

// SetDependentsClock makes the gate of the engine's store (shared by the
// engines of its wake key) tell the time by now, a monotonic clock,
// instead of the process's: a test that holds it still knows the horizon
// is read again only after news of another process. Call it before the
// engine's workers start.
func (e *Engine) SetDependentsClock(now func() time.Duration) {
	e.deps.now = func() int64 { return int64(now()) + 1 } // never 0, as depClock
}

// depEpoch is the start of depClock.
var depEpoch = time.Now()

// depClock is the monotonic time since depEpoch, never 0.
func depClock() int64 { return int64(time.Since(depEpoch)) + 1 }

// raise raises the horizon to id.
func (g *depGate) raise(id int64) {
	for {
		cur := g.horizon.Load()
		if id <= cur || g.horizon.CompareAndSwap(cur, id) {
			return
		}
	}
}

// due reports whether the store's horizon is to be read again.
func (g *depGate) due() bool {
	at := g.readAt.Load()
	if at == 0 {
		return true
	}
	age := time.Duration(g.now() - at)
	return age >= depReadMaxAge || (age >= depReadGap && g.heard.Load())
}

// dependentsCompleted is the completion hook of the engine's job notes
// (jobnote.OnCompleted, set by noteJobs): the store's completions of jobs
// (a plain job's, a held claim's, a step job's as its workflow advances,
// whatever path completes them) call it in their transaction, and it
// notes the pending dependents of ids as made claimable (jobnote.Ready),
// so the caller wakes workers for them once it committed. It reads them
// only when one of ids may have a dependent (see above).
func (e *Engine) dependentsCompleted(ctx context.Context, tx driver.Tx, ids []int64) error {
	dt, ok := tx.(driver.DependentsTx)
	if !ok || len(ids) == 0 {
		return nil
	}
	horizon, may, err := e.mayHaveDependents(ctx, dt, slices.Min(ids))
	if err != nil || !may {
		return err
	}
	below := make([]int64, 0, len(ids))
	for _, id := range ids {
		if id <= horizon {
			below = append(below, id)
		}
	}
	return e.readDependents(ctx, dt, below)
}

// mayHaveDependents reports whether a job with an id as low as lo may have
// a dependent, and the horizon, reading it from the store (in dt) when it
// is due.
func (e *Engine) mayHaveDependents(ctx context.Context, dt driver.DependentsTx, lo int64) (horizon int64, may bool, err error) {
	g := e.deps
	if lo > g.horizon.Load() {
		if !g.due() {
			return 0, false, nil
		}
		heard := g.heard.Swap(false) // news heard during the read calls for another
		h, err := dt.JobDependsOnMax(ctx)
		if err != nil {
			if heard {
				g.heard.Store(true) // not taken: the transaction's retry reads again
			}
			return 0, false, err
		}
		g.raise(h)
		g.readAt.Store(g.now())
	}
	horizon = g.horizon.Load()
	return horizon, lo <= horizon, nil
}

// readDependents notes the pending dependents of ids as claimable.
func (e *Engine) readDependents(ctx context.Context, dt driver.DependentsTx, ids []int64) error {
	deps, err := dt.JobPendingDependents(ctx, ids)
	if err != nil {
		return err
	}
	jobnote.Ready(ctx, deps...)
	return nil
}

// claimedDependents raises the horizon to the claimed jobs that depend on
// another: a chain's job most likely has a dependent too.
func (e *Engine) claimedDependents(claimed []*Claimed) {
	for _, cj := range claimed {
		if cj.Job.DependsOn != 0 {
			e.deps.raise(cj.Job.ID)
		}
	}
}
