package mysql_test

import (
	"context"
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

// openQuiet opens a client on a migrated table set that logs nothing.
func openQuiet(t *testing.T) *queuety.Client {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// deadlockPair makes the server pick a deadlock victim: two transactions,
// run by c's store's InTx with ctxs[0] and ctxs[1], each lock one of two
// jobs, run work (side 0 or 1), and then ask for the other's job. The
// server rolls one back with error 1213 and InTx runs it again. It
// returns each side's InTx error and how many attempts ran in all.
func deadlockPair(t *testing.T, c *queuety.Client, ctxs [2]context.Context, work func(ctx context.Context, tx driver.Tx, side int) error) (errs [2]error, attempts int32) {
	t.Helper()
	ids, err := c.DispatchMany(context.Background(), []queuety.JobRequest{{Handler: "a"}, {Handler: "b"}})
	require.NoError(t, err)
	require.Len(t, ids, 2)
	var n atomic.Int32
	var bothLocked, done sync.WaitGroup
	bothLocked.Add(2)
	for side := range 2 {
		done.Add(1)
		go func() {
			defer done.Done()
			ctx, first, second := ctxs[side], ids[side], ids[1-side]
			firstAttempt := true
			errs[side] = clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
				n.Add(1)
				if _, err := tx.JobGet(ctx, first, driver.LockUpdate); err != nil {
					return err
				}
				if err := work(ctx, tx, side); err != nil {
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
		}()
	}
	done.Wait()
	return errs, n.Load()
}

// TestDeadlockIsRetried: of two transactions that each lock one job and
// then the other's, the server rolls one back with error 1213; InTx runs
// it again, and both commit.
func TestDeadlockIsRetried(t *testing.T) {
	t.Parallel()
	c := openQuiet(t)
	ctx := context.Background()
	errs, attempts := deadlockPair(t, c, [2]context.Context{ctx, ctx}, func(context.Context, driver.Tx, int) error { return nil })
	for _, err := range errs {
		require.NoError(t, err, "transaction failed instead of being retried")
	}
	assert.Equal(t, int32(3), attempts, "transaction attempts (one deadlock victim run again)")
}

// TestRetriedTransactionNotesItsJobsOnce: the jobs a transaction inserts
// are noted for the wake-up after its commit once, however often InTx
// ran it: the deadlock victim's first attempt, rolled back, is forgotten,
// so the retried transaction wakes no more idle workers than it made
// jobs.
func TestRetriedTransactionNotesItsJobsOnce(t *testing.T) {
	t.Parallel()
	c := openQuiet(t)
	var ctxs [2]context.Context
	var notes [2]*jobnote.Note
	for i := range 2 {
		ctxs[i], notes[i] = jobnote.With(context.Background())
	}
	handlers := [2]string{"x", "y"}
	errs, attempts := deadlockPair(t, c, ctxs, func(ctx context.Context, tx driver.Tx, side int) error {
		now := time.Now().UTC().Truncate(time.Second)
		job := &driver.Job{Queue: "default", Handler: handlers[side], Payload: []byte(`{}`), Status: driver.JobPending,
			MaxAttempts: 3, AvailableAt: now, CreatedAt: now, CostUnits: 1}
		return tx.JobInsert(ctx, []*driver.Job{job})
	})
	for i := range 2 {
		require.NoError(t, errs[i], "transaction failed instead of being retried")
		counts, _ := notes[i].Take()
		assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: handlers[i]}: 1}, counts, "jobs noted by the transaction inserting %q", handlers[i])
	}
	require.Equal(t, int32(3), attempts, "transaction attempts (one deadlock victim run again)")
}

// TestRetriedCompletionNotesItsDependentsOnce: a transaction that
// completes a job with a pending dependent, run with the engine's job
// note, notes that dependent as claimable once when the server rolls its
// first attempt back (a deadlock victim) and InTx runs it again: the
// store's completion in the retry runs the engine's dependents read again,
// and the first attempt's notes are forgotten.
func TestRetriedCompletionNotesItsDependentsOnce(t *testing.T) {
	t.Parallel()
	c := openQuiet(t)
	ctx := context.Background()
	parents, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "parent"}, {Handler: "parent"}})
	require.NoError(t, err)
	handlers := [2]string{"x", "y"}
	for i, p := range parents {
		// dispatched in this process: the engine knows the dependency
		_, err := c.Dispatch(ctx, handlers[i], nil, queuety.DependsOn(p))
		require.NoError(t, err)
	}

	e := clientseam.Engine(c)
	var ctxs [2]context.Context
	for i := range 2 {
		ctxs[i], _ = e.NoteJobs(ctx)
	}
	errs, attempts := deadlockPair(t, c, ctxs, func(ctx context.Context, tx driver.Tx, side int) error {
		return tx.JobComplete(ctx, []int64{parents[side]}, time.Now())
	})
	for i := range 2 {
		require.NoError(t, errs[i], "transaction failed instead of being retried")
		counts, _ := jobnote.Of(ctxs[i]).Take()
		assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: handlers[i]}: 1}, counts,
			"dependents noted by the transaction completing the parent of %q", handlers[i])
	}
	require.Equal(t, int32(3), attempts, "transaction attempts (one deadlock victim run again)")
}
