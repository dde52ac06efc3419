// Package txcount is for tests: it wraps a real store's transactions so
// that their dependents reads (driver.DependentsTx) are counted: how often
// the highest depends_on is read, and which ids each dependents lookup
// asks about. A test wraps the function its store's InTx runs (Reads.Wrap)
// and keeps the store's other methods, so a store's optional interfaces
// (a notifier's, a held claimer's) stay as they are.
package txcount

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// Reads counts the dependents reads of the transactions it wraps.
type Reads struct {
	max     atomic.Int64
	failMax atomic.Bool
	mu      sync.Mutex
	lookups [][]int64
}

// ErrMaxFailed is the error of a read of the highest depends_on that
// FailNextMax failed.
var ErrMaxFailed = errors.New("the highest depends_on could not be read")

// Max returns how many times the highest depends_on was read.
func (r *Reads) Max() int { return int(r.max.Load()) }

// Lookups returns the ids of each dependents lookup, in order.
func (r *Reads) Lookups() [][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lookups)
}

// FailNextMax makes the next read of the highest depends_on fail with
// ErrMaxFailed (counted all the same).
func (r *Reads) FailNextMax() { r.failMax.Store(true) }

// Wrap returns fn run on a Tx around its transaction, counting in r: a
// store's InTx(ctx, r.Wrap(fn)) counts the dependents reads fn makes. It
// panics when the store's transactions make no dependents reads.
func (r *Reads) Wrap(fn func(driver.Tx) error) func(driver.Tx) error {
	return func(tx driver.Tx) error {
		if _, ok := tx.(driver.DependentsTx); !ok {
			panic("txcount: the store's transactions have no dependents reads (driver.DependentsTx)")
		}
		return fn(Tx{Tx: tx, Reads: r})
	}
}

// Tx is a store's own transaction (a driver.DependentsTx) that counts its
// dependents reads in Reads and runs them on itself. The dependents reads
// of its completions, which the store runs from them (the job note's
// hook), go through it too (jobnote.WithTx). The other optional
// interfaces of the store's transactions (those of workflows) are not
// carried over.
type Tx struct {
	driver.Tx
	Reads *Reads
}

// JobComplete implements driver.Tx, the dependents reads counted.
func (t Tx) JobComplete(ctx context.Context, ids []int64, at time.Time) error {
	return t.Tx.JobComplete(jobnote.WithTx(ctx, t), ids, at)
}

// JobCompleteClaimed implements driver.Tx, the dependents reads counted.
func (t Tx) JobCompleteClaimed(ctx context.Context, ids []int64, token int64, attempts int, at time.Time) (int64, error) {
	return t.Tx.JobCompleteClaimed(jobnote.WithTx(ctx, t), ids, token, attempts, at)
}

// JobDependsOnMax implements driver.DependentsTx, counted.
func (t Tx) JobDependsOnMax(ctx context.Context) (int64, error) {
	t.Reads.max.Add(1)
	if t.Reads.failMax.CompareAndSwap(true, false) {
		return 0, ErrMaxFailed
	}
	return t.Tx.(driver.DependentsTx).JobDependsOnMax(ctx)
}

// JobPendingDependents implements driver.DependentsTx, its ids kept.
func (t Tx) JobPendingDependents(ctx context.Context, ids []int64) ([]*driver.Job, error) {
	t.Reads.mu.Lock()
	t.Reads.lookups = append(t.Reads.lookups, slices.Clone(ids))
	t.Reads.mu.Unlock()
	return t.Tx.(driver.DependentsTx).JobPendingDependents(ctx, ids)
}
