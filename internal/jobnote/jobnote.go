// Package jobnote notes, for the caller of a transaction, which jobs the
// transaction made claimable, so the caller can wake as many idle workers
// as they need once it has committed. The caller puts a Note in the
// context it runs the transaction with (With); the store's job insert
// marks it (Inserted), and the engine marks rows it makes claimable
// without inserting them (Ready, Any).
package jobnote

import (
	"context"
	"sync"

	"github.com/queuety/queuety-go/store/driver"
)

// Key is the queue and handler of claimable jobs: a worker that claims
// neither wants no wake-up for them.
type Key struct{ Queue, Handler string }

// Note records the claimable jobs made with a context that carries it.
type Note struct {
	mu     sync.Mutex
	counts map[Key]int
	any    bool // claimable jobs of unknown number and kind
	// depends, when set, is told of the dependency of every job inserted
	// with a depends_on, before the transaction commits (OnDependsOn).
	depends func(id int64)
}

type key struct{}

// With returns ctx carrying a new Note, and the Note.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, key{}, n), n
}

func from(ctx context.Context) *Note {
	n, _ := ctx.Value(key{}).(*Note)
	return n
}

// OnDependsOn makes the jobs inserted with the note's context tell f the
// job each depends on (depends_on), as they are inserted: before the
// transaction commits, so the completion of that job, however soon,
// knows it has a dependent.
func (n *Note) OnDependsOn(f func(id int64)) { n.depends = f }

// Inserted notes the pending jobs among jobs, inserted with ctx (one
// inserted already claimed, processing, does not count), and tells the
// note's OnDependsOn function the jobs they depend on.
func Inserted(ctx context.Context, jobs []*driver.Job) {
	if n := from(ctx); n != nil && n.depends != nil {
		for _, j := range jobs {
			if j.DependsOn != 0 {
				n.depends(j.DependsOn)
			}
		}
	}
	note(ctx, jobs, func(j *driver.Job) bool { return j.Status == "" || j.Status == driver.JobPending })
}

// Ready notes jobs that the transaction run with ctx makes claimable
// without inserting them (handed back, retried at once).
func Ready(ctx context.Context, jobs ...*driver.Job) {
	note(ctx, jobs, func(*driver.Job) bool { return true })
}

// note counts the jobs that count reports in the note ctx carries, if
// any.
func note(ctx context.Context, jobs []*driver.Job, count func(*driver.Job) bool) {
	n := from(ctx)
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, j := range jobs {
		if !count(j) {
			continue
		}
		if n.counts == nil {
			n.counts = map[Key]int{}
		}
		n.counts[Key{Queue: j.Queue, Handler: j.Handler}]++
	}
}

// Any notes that the transaction run with ctx may make jobs claimable
// that it cannot name (a concurrency group slot it frees): every idle
// worker is woken.
func Any(ctx context.Context) {
	if n := from(ctx); n != nil {
		n.mu.Lock()
		n.any = true
		n.mu.Unlock()
	}
}

// Pending reports whether claimable jobs were noted (the transaction may
// still have rolled back).
func (n *Note) Pending() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.any || len(n.counts) > 0
}

// Take returns the jobs noted, by queue and handler, and whether jobs of
// unknown number and kind were, and clears the note.
func (n *Note) Take() (counts map[Key]int, any bool) {
	if n == nil {
		return nil, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	counts, any = n.counts, n.any
	n.counts, n.any = nil, false
	return counts, any
}
