// Package storetest holds the suites every queuety store must pass, run
// by the store's own tests against a real database:
//
//   - the driver suite (RunDriver) checks the driver.Tx contract row
//     operation by row operation, without the engine: claim order and
//     filters, lock modes, compare-and-set updates, insert ids, errors,
//     list filters and the sweeps' selections;
//   - the acceptance suite (RunAcceptance) drives the engine through the
//     public API (Client, worker, deadline) with a fake clock, so deadline
//     and timeout scenarios take milliseconds, and checks the rows the
//     store writes;
//   - Bench measures the hot row operations and an engine round trip, so
//     the stores can be compared with the same numbers.
//
// A store's tests run both suites and the benchmarks with one Harness that
// hands out fresh databases:
//
//	var harness = storetest.Harness{DSN: func(tb testing.TB) string { ... }}
//
//	func TestDriver(t *testing.T)     { storetest.RunDriver(t, harness) }
//	func TestAcceptance(t *testing.T) { storetest.RunAcceptance(t, harness) }
//	func BenchmarkDriver(b *testing.B) { storetest.Bench(b, harness) }
package storetest

import (
	"sort"
	"strings"
	"sync"
	"testing"
)

// Harness opens databases for the suites.
type Harness struct {
	// DSN returns a DSN for a fresh database (or table prefix) with no
	// rows of its own, cleaned up when tb ends. Its tables may be missing
	// or already migrated; the suites migrate when they open it. Opening
	// the same DSN twice must reach the same database, so the suites can
	// run several stores or clients (separate connections) against it.
	DSN func(tb testing.TB) string
	// SerialWriters says the store runs one write transaction at a time
	// instead of locking rows (SQLite: every transaction begins
	// IMMEDIATE): a second transaction waits until the first commits, and
	// LockUpdate and LockSkipLocked read like LockNone. The driver suite
	// then checks that concurrent transactions take turns instead of
	// checking what row locks let the second one see.
	SerialWriters bool
}

// testCase is one named case of a suite, run on an environment E.
type testCase[E any] struct {
	name string
	run  func(t *testing.T, e E)
}

// registry collects a suite's cases; each file of the suite registers its
// own from an init function.
type registry[E any] struct {
	mu    sync.Mutex
	cases []testCase[E]
}

func (r *registry[E]) add(name string, run func(t *testing.T, e E)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cases = append(r.cases, testCase[E]{name, run})
}

// run runs every case, in name order, as a parallel subtest on its own
// environment; with prefixes, only the cases whose names start with one.
func (r *registry[E]) run(t *testing.T, newEnv func(t *testing.T) E, prefixes ...string) {
	r.mu.Lock()
	var all []testCase[E]
	for _, c := range r.cases {
		keep := len(prefixes) == 0
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(c.name, p)
		}
		if keep {
			all = append(all, c)
		}
	}
	r.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newEnv(t))
		})
	}
}

var acceptance registry[*Env]

// register adds an acceptance case.
func register(name string, run func(t *testing.T, e *Env)) { acceptance.add(name, run) }

// RunAcceptance runs the engine acceptance suite: every scenario as a
// parallel subtest, each on its own database with its own fake clock.
func RunAcceptance(t *testing.T, h Harness) {
	acceptance.run(t, func(t *testing.T) *Env { return NewEnv(t, h) })
}

// RunAcceptanceOf runs the acceptance cases whose names start with one of
// prefixes ("Jobs/", "Schedules/"), as RunAcceptance runs them.
func RunAcceptanceOf(t *testing.T, h Harness, prefixes ...string) {
	acceptance.run(t, func(t *testing.T) *Env { return NewEnv(t, h) }, prefixes...)
}
