// Package jobnote notes, for the caller of a transaction, which jobs the
// transaction made claimable, so the caller can wake as many idle workers
// as they need once it has committed. The caller puts a Note in the
// context it runs the transaction with (With); the store's job insert
// marks it (Inserted), the store's job completions tell the note's
// completion hook which jobs they completed (Completed; a caller can
// have several completions told at once: Gather), and the engine
// marks rows it makes claimable without inserting them (Ready, Any). The
// store's transaction helper rewinds the note to where it was when an
// attempt began (Mark, Rewind) when that attempt rolls back.
package jobnote

import (
	"context"
	"sync"

	"github.com/queuety/queuety-go/store/driver"
)

// Key is the queue and handler of claimable jobs: a worker that claims
// neither wants no wake-up for them.
type Key struct{ Queue, Handler string }

// entry is a run of jobs noted one after another with one Key.
type entry struct {
	k Key
	n int
}

// CompletedFunc is a note's completion hook (OnCompleted): it runs in the
// transaction tx that completed the jobs of ids, before it commits.
type CompletedFunc func(ctx context.Context, tx driver.Tx, ids []int64) error

// Note records the claimable jobs made with a context that carries it.
// The transactions of one note run one at a time (Mark and Rewind rely on
// it); the lock only keeps a stray concurrent use from corrupting it.
type Note struct {
	mu sync.Mutex
	// entries are the jobs noted, in order, a run of one key in one
	// entry; they start in inline, so that a note of a few keys, marked
	// and rewound, allocates nothing more.
	entries []entry
	inline  [2]entry
	any     bool // claimable jobs of unknown number and kind
	// depends, when set, is told of the dependency of every job inserted
	// with a depends_on, before the transaction commits (OnDependsOn).
	depends func(id int64)
	// completed, when set, runs in the transaction of every completion
	// of jobs made with the note's context (OnCompleted).
	completed CompletedFunc
}

type key struct{}

// txKey carries the transaction a completion hook runs in (WithTx).
type txKey struct{}

// With returns ctx carrying a new Note, and the Note.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	n.entries = n.inline[:0]
	return context.WithValue(ctx, key{}, n), n
}

// Of returns the Note ctx carries, or nil.
func Of(ctx context.Context) *Note {
	n, _ := ctx.Value(key{}).(*Note)
	return n
}

// OnDependsOn makes the jobs inserted with the note's context tell f the
// job each depends on (depends_on), as they are inserted: before the
// transaction commits, so the completion of that job, however soon,
// knows it has a dependent.
func (n *Note) OnDependsOn(f func(id int64)) { n.depends = f }

// OnCompleted makes the store's job completions run with the note's
// context (driver.Tx.JobComplete, JobCompleteClaimed,
// driver.HeldTx.JobCompleteHeld) call f with the ids of the jobs they
// completed, in their transaction, before it commits; an error of f fails
// the completion. Every path that completes jobs under the note is
// covered so, whatever its caller.
func (n *Note) OnCompleted(f CompletedFunc) { n.completed = f }

// Inserted notes the pending jobs among jobs, inserted with ctx (one
// inserted already claimed, processing, does not count), and tells the
// note's OnDependsOn function the jobs they depend on.
func Inserted(ctx context.Context, jobs []*driver.Job) {
	n := Of(ctx)
	if n == nil {
		return
	}
	if n.depends != nil {
		for _, j := range jobs {
			if j.DependsOn != 0 {
				n.depends(j.DependsOn)
			}
		}
	}
	n.note(jobs, func(j *driver.Job) bool { return j.Status == "" || j.Status == driver.JobPending })
}

// Completed tells the completion hook of the note ctx carries, if any,
// that the store's transaction tx completed the jobs of ids (a store
// calls it from its job completions): the hook runs in tx, in the
// transaction WithTx named instead when ctx carries one; with a Gather
// context it only holds them for Gather's function. Ids that did not
// change (a stale attempt's) may be among ids: the hook treats them as
// completed, which can only wake a worker for nothing.
func Completed(ctx context.Context, tx driver.Tx, ids []int64) error {
	n := Of(ctx)
	if n == nil || n.completed == nil || len(ids) == 0 {
		return nil
	}
	if outer, ok := ctx.Value(txKey{}).(driver.Tx); ok {
		tx = outer
	}
	if g, ok := ctx.Value(gatherKey{}).(*gathered); ok && g.note == n {
		g.ids, g.tx = append(g.ids, ids...), tx
		return nil
	}
	return n.completed(ctx, tx, ids)
}

// gatherKey carries the completions a Gather context holds back.
type gatherKey struct{}

// gathered holds the ids of the completions run with a Gather context,
// and the transaction they ran in.
type gathered struct {
	note *Note // whose hook it holds them for (a note made inside runs its own)
	ids  []int64
	tx   driver.Tx
}

// Gather returns ctx whose completions hold back the ids they complete
// instead of running the note's completion hook, and a function that
// runs the hook once for all of them, in the transaction they ran in, and
// forgets them: a caller that completes jobs with several statements in
// one transaction (one a claim) has their dependents read with one. It
// returns ctx as it is, and a function that does nothing, when ctx
// carries no note with a hook.
func Gather(ctx context.Context) (context.Context, func() error) {
	n := Of(ctx)
	if n == nil || n.completed == nil {
		return ctx, func() error { return nil }
	}
	g := &gathered{note: n}
	return context.WithValue(ctx, gatherKey{}, g), func() error {
		ids, tx := g.ids, g.tx
		g.ids, g.tx = nil, nil
		if len(ids) == 0 {
			return nil
		}
		return n.completed(ctx, tx, ids)
	}
}

// WithTx returns ctx whose completions run the note's completion hook in
// tx rather than in the store's own transaction: for a transaction that
// wraps the store's and passes its completions on to it, so the hook's
// reads go through the wrapper too.
func WithTx(ctx context.Context, tx driver.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Ready notes jobs that the transaction run with ctx makes claimable
// without inserting them (handed back, retried at once, the pending
// dependents of completed jobs).
func Ready(ctx context.Context, jobs ...*driver.Job) {
	if n := Of(ctx); n != nil {
		n.note(jobs, func(*driver.Job) bool { return true })
	}
}

// note counts the jobs that count reports.
func (n *Note) note(jobs []*driver.Job, count func(*driver.Job) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, j := range jobs {
		if !count(j) {
			continue
		}
		k := Key{Queue: j.Queue, Handler: j.Handler}
		if last := len(n.entries) - 1; last >= 0 && n.entries[last].k == k {
			n.entries[last].n++
			continue
		}
		n.entries = append(n.entries, entry{k: k, n: 1})
	}
}

// Any notes that the transaction run with ctx may make jobs claimable
// that it cannot name (a concurrency group slot it frees): every idle
// worker is woken.
func Any(ctx context.Context) {
	if n := Of(ctx); n != nil {
		n.mu.Lock()
		n.any = true
		n.mu.Unlock()
	}
}

// Mark is a position in a Note (Note.Mark).
type Mark struct {
	entries, last int // len(entries) and the count of the last one
	any           bool
}

// Mark returns the note's position now, for Rewind. A nil Note's is the
// zero Mark.
func (n *Note) Mark() Mark {
	if n == nil {
		return Mark{}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	m := Mark{entries: len(n.entries), any: n.any}
	if m.entries > 0 {
		m.last = n.entries[m.entries-1].n
	}
	return m
}

// Rewind forgets what was noted since m (from Mark): a transaction
// attempt that rolled back made nothing claimable. The note must not have
// been taken since m. It does nothing on a nil Note.
func (n *Note) Rewind(m Mark) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if m.entries > len(n.entries) {
		return // taken since m: nothing of it is left to forget
	}
	n.entries = n.entries[:m.entries]
	if m.entries > 0 {
		n.entries[m.entries-1].n = m.last
	}
	n.any = m.any
}

// Pending reports whether claimable jobs were noted (the transaction may
// still have rolled back).
func (n *Note) Pending() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.any || len(n.entries) > 0
}

// Take returns the jobs noted, by queue and handler, and whether jobs of
// unknown number and kind were, and clears the note.
func (n *Note) Take() (counts map[Key]int, any bool) {
	if n == nil {
		return nil, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.entries) > 0 {
		counts = make(map[Key]int, len(n.entries))
		for _, e := range n.entries {
			counts[e.k] += e.n
		}
	}
	any = n.any
	clear(n.entries) // drop the strings they hold
	n.entries, n.any = n.entries[:0], false
	return counts, any
}
