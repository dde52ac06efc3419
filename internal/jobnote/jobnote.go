// Package jobnote notes, for the caller of a transaction, that the
// transaction inserted pending jobs, so the caller can wake idle workers
// once it has committed. The caller puts a Note in the context it runs
// the transaction with (With); the store's job insert marks it
// (Inserted).
package jobnote

import (
	"context"
	"sync/atomic"

	"github.com/queuety/queuety-go/store/driver"
)

// Note records whether pending jobs were inserted with a context that
// carries it.
type Note struct{ pending atomic.Bool }

type key struct{}

// With returns ctx carrying a new Note, and the Note.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, key{}, n), n
}

// Inserted marks the Note of ctx, if any, when jobs holds a pending job
// (one inserted already claimed, processing, does not count).
func Inserted(ctx context.Context, jobs []*driver.Job) {
	n, _ := ctx.Value(key{}).(*Note)
	if n == nil || n.pending.Load() {
		return
	}
	for _, j := range jobs {
		if j.Status == "" || j.Status == driver.JobPending {
			n.pending.Store(true)
			return
		}
	}
}

// Pending reports whether pending jobs were inserted (the transaction may
// still have rolled back).
func (n *Note) Pending() bool { return n != nil && n.pending.Load() }
