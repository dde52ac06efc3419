package mysql_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// TestDeadlockIsRetried makes the server pick a deadlock victim: two
// transactions each lock one job, then the other's. The server rolls one
// back with error 1213; InTx runs it again, and both commit.
func TestDeadlockIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer c.Close()
	ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "a"}, {Handler: "b"}})
	require.NoError(t, err)
	require.Len(t, ids, 2)

	var attempts atomic.Int32
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	lockInOrder := func(first, second int64) error {
		firstAttempt := true
		return clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			attempts.Add(1)
			if _, err := tx.JobGet(ctx, first, driver.LockUpdate); err != nil {
				return err
			}
			if firstAttempt {
				firstAttempt = false
				bothLocked.Done()
				bothLocked.Wait() // each now holds one lock and asks for the other's
			}
			_, err := tx.JobGet(ctx, second, driver.LockUpdate)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockInOrder(ids[0], ids[1]) }()
	go func() { errs <- lockInOrder(ids[1], ids[0]) }()
	for range 2 {
		require.NoError(t, <-errs, "transaction failed instead of being retried")
	}
	assert.Equal(t, int32(3), attempts.Load(), "transaction attempts (one deadlock victim run again)")
}

// TestRetriedTransactionNotesItsJobsOnce: the jobs a transaction inserts
// are noted for the wake-up after its commit once, however often InTx
// ran it: the deadlock victim's first attempt, rolled back, is forgotten,
// so the retried transaction wakes no more idle workers than it made
// jobs.
func TestRetriedTransactionNotesItsJobsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer c.Close()
	ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "a"}, {Handler: "b"}})
	require.NoError(t, err)
	require.Len(t, ids, 2)

	var attempts atomic.Int32
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	lockInOrder := func(first, second int64, handler string) (map[jobnote.Key]int, error) {
		ctx, note := jobnote.With(ctx)
		firstAttempt := true
		err := clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			attempts.Add(1)
			if _, err := tx.JobGet(ctx, first, driver.LockUpdate); err != nil {
				return err
			}
			now := time.Now().UTC().Truncate(time.Second)
			job := &driver.Job{Queue: "default", Handler: handler, Payload: []byte(`{}`), Status: driver.JobPending,
				MaxAttempts: 3, AvailableAt: now, CreatedAt: now, CostUnits: 1}
			if err := tx.JobInsert(ctx, []*driver.Job{job}); err != nil {
				return err
			}
			if firstAttempt {
				firstAttempt = false
				bothLocked.Done()
				bothLocked.Wait() // each now holds one lock and asks for the other's
			}
			_, err := tx.JobGet(ctx, second, driver.LockUpdate)
			return err
		})
		counts, _ := note.Take()
		return counts, err
	}
	type result struct {
		handler string
		counts  map[jobnote.Key]int
		err     error
	}
	results := make(chan result, 2)
	for _, r := range []struct {
		first, second int64
		handler       string
	}{{ids[0], ids[1], "x"}, {ids[1], ids[0], "y"}} {
		go func() {
			counts, err := lockInOrder(r.first, r.second, r.handler)
			results <- result{r.handler, counts, err}
		}()
	}
	for range 2 {
		r := <-results
		require.NoError(t, r.err, "transaction failed instead of being retried")
		assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: r.handler}: 1}, r.counts, "jobs noted by the transaction inserting %q", r.handler)
	}
	require.Equal(t, int32(3), attempts.Load(), "transaction attempts (one deadlock victim run again)")
}

// TestRetriedCompletionNotesItsDependentsOnce: a transaction that
// completes a job with a pending dependent, run with the engine's job
// note, notes that dependent as claimable once when the server rolls its
// first attempt back (a deadlock victim) and InTx runs it again: the
// store's completion in the retry runs the engine's dependents read again,
// and the first attempt's notes are forgotten.
func TestRetriedCompletionNotesItsDependentsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer c.Close()
	locks, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "a"}, {Handler: "b"}})
	require.NoError(t, err)
	parents, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "parent"}, {Handler: "parent"}})
	require.NoError(t, err)
	for i, p := range parents {
		// dispatched in this process: the engine knows the dependency
		_, err := c.Dispatch(ctx, []string{"x", "y"}[i], nil, queuety.DependsOn(p))
		require.NoError(t, err)
	}

	e := clientseam.Engine(c)
	var attempts atomic.Int32
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	completeLocked := func(first, second, parent int64) (map[jobnote.Key]int, error) {
		noted, _ := e.NoteJobs(ctx)
		firstAttempt := true
		err := clientseam.StoreOf(c).InTx(noted, func(tx driver.Tx) error {
			attempts.Add(1)
			if _, err := tx.JobGet(noted, first, driver.LockUpdate); err != nil {
				return err
			}
			if err := tx.JobComplete(noted, []int64{parent}, time.Now()); err != nil {
				return err
			}
			if firstAttempt {
				firstAttempt = false
				bothLocked.Done()
				bothLocked.Wait() // each now holds one lock and asks for the other's
			}
			_, err := tx.JobGet(noted, second, driver.LockUpdate)
			return err
		})
		counts, _ := jobnote.Of(noted).Take()
		return counts, err
	}
	type result struct {
		handler string
		counts  map[jobnote.Key]int
		err     error
	}
	results := make(chan result, 2)
	for i, r := range []struct{ first, second int64 }{{locks[0], locks[1]}, {locks[1], locks[0]}} {
		go func() {
			counts, err := completeLocked(r.first, r.second, parents[i])
			results <- result{[]string{"x", "y"}[i], counts, err}
		}()
	}
	for range 2 {
		r := <-results
		require.NoError(t, r.err, "transaction failed instead of being retried")
		assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: r.handler}: 1}, r.counts,
			"dependents noted by the transaction completing the parent of %q", r.handler)
	}
	require.Equal(t, int32(3), attempts.Load(), "transaction attempts (one deadlock victim run again)")
}
