package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// twoClients opens two clients on one MariaDB database, as two worker
// processes would, on one fake clock.
func twoClients(t *testing.T) (a, b *queuety.Client, clock *queuety.FakeClock) {
	t.Helper()
	dsn, _ := testdb.DSN(t)
	clock = queuety.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	open := func() *queuety.Client {
		c, err := queuety.Open(context.Background(), dsn, queuety.WithClock(clock), queuety.WithLogger(quiet))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	return open(), open(), clock
}

// lockRow reads the locks-table row of key, or nil.
func lockRow(t *testing.T, c *queuety.Client, key string) *driver.Lock {
	t.Helper()
	var l *driver.Lock
	require.NoError(t, clientseam.StoreOf(c).InTx(context.Background(), func(tx driver.Tx) (err error) {
		l, err = tx.LockGet(context.Background(), key, driver.LockNone)
		if errors.Is(err, driver.ErrNotFound) {
			l, err = nil, nil
		}
		return err
	}))
	return l
}

// runBoth runs RunOnce on both workers at once.
func runBoth(t *testing.T, ws ...*worker.Worker) {
	t.Helper()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.RunOnce(context.Background(), time.Minute)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
}

// TestRateLimitedAcrossTwoWorkers: two workers on two connections, four
// handlers each at once, share one RateLimited(3, 1 min) budget: 3 of 10
// jobs run, the others are handed back unused until the window moves.
func TestRateLimitedAcrossTwoWorkers(t *testing.T) {
	ctx := context.Background()
	a, b, clock := twoClients(t)
	var runs atomic.Int32
	newWorker := func(c *queuety.Client) *worker.Worker {
		w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(4), worker.WithLogger(quiet))
		w.UseFor("sync_inventory", middleware.RateLimited(3, time.Minute))
		w.HandleJob("sync_inventory", func(context.Context, queuety.Payload) error { runs.Add(1); return nil })
		return w
	}
	wa, wb := newWorker(a), newWorker(b)
	for i := range 10 {
		_, err := a.Dispatch(ctx, "sync_inventory", queuety.State{"sku": i})
		require.NoError(t, err)
	}
	runBoth(t, wa, wb)
	assert.EqualValues(t, 3, runs.Load(), "runs in the first window, both workers together")
	pending, err := a.ListJobs(ctx, queuetytype.JobFilter{Status: queuetytype.JobPending})
	require.NoError(t, err)
	require.Len(t, pending, 7)
	for _, j := range pending {
		assert.Zero(t, j.Attempts, "job %d: handed back without using an attempt", j.ID)
		assert.False(t, j.AvailableAt.After(clock.Now().Add(time.Minute)), "job %d: due once the window moved", j.ID)
		assert.True(t, j.AvailableAt.After(clock.Now()), "job %d: not due before", j.ID)
	}

	clock.Advance(time.Minute + time.Second)
	runBoth(t, wa, wb)
	assert.EqualValues(t, 6, runs.Load(), "runs after the window moved")
}

// TestRateLimitedHandsBackUntilForeignStartLeaves: a start Queuety PHP
// logged is stamped with a whole second s and happened somewhere in
// [s, s+1s), so it holds its slot until s+1s+window, as the claim's rate
// limits count it. A job refused for that slot is handed back until then,
// not a second early (when it would only be refused again).
func TestRateLimitedHandsBackUntilForeignStartLeaves(t *testing.T) {
	ctx := context.Background()
	a, _, clock := twoClients(t)
	stamped := clock.Now()
	foreignJob, attempt := int64(999999), 1
	require.NoError(t, clientseam.StoreOf(a).InTx(ctx, func(tx driver.Tx) error {
		return tx.LogInsert(ctx, []*driver.LogEntry{{JobID: &foreignJob, Handler: "sync", Queue: "default",
			Event: driver.LogStarted, Attempt: &attempt, CreatedAt: stamped}})
	}))
	var runs atomic.Int32
	w := worker.New(a, worker.NoMaintenance(), worker.WithLogger(quiet))
	w.UseFor("sync", middleware.RateLimited(1, 10*time.Second))
	w.HandleJob("sync", func(context.Context, queuety.Payload) error { runs.Add(1); return nil })
	_, err := a.Dispatch(ctx, "sync", nil)
	require.NoError(t, err)

	clock.Advance(5 * time.Second)
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 0, runs.Load(), "s+5 s: the foreign start holds the only slot")
	pending, err := a.ListJobs(ctx, queuetytype.JobFilter{Status: queuetytype.JobPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, stamped.Add(11*time.Second), pending[0].AvailableAt.UTC(), "due when the slot frees: s+1 s+10 s")
	assert.Zero(t, pending[0].Attempts)

	clock.Advance(6 * time.Second)
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.EqualValues(t, 1, runs.Load(), "s+11 s: the foreign start left the window")
}

// TestRateLimitedMessage: the release's reason is Queuety's message.
func TestRateLimitedMessage(t *testing.T) {
	assert.Equal(t, "Rate limit exceeded for 'sync': max 60 executions per 60 seconds.", middleware.RateLimitMessage("sync", 60, time.Minute))
	assert.Panics(t, func() { middleware.RateLimited(0, time.Minute) })
	assert.Panics(t, func() { middleware.RateLimited(1, 0) })
}

// TestUniqueJobAcrossTwoWorkers: while one worker runs a UniqueJob
// handler, the same handler's job on another worker completes without
// running (Queuety's "silently skipped"), and the lock row is Queuety's:
// 32-hex owner, no expiry, gone afterwards.
func TestUniqueJobAcrossTwoWorkers(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoClients(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	wa := worker.New(a, worker.NoMaintenance(), worker.Concurrency(1), worker.WithLogger(quiet))
	wa.UseFor("rebuild_index", middleware.UniqueJob(""))
	wa.HandleJob("rebuild_index", func(context.Context, queuety.Payload) error {
		close(entered)
		<-proceed
		return nil
	})
	var skippedRan atomic.Bool
	wb := worker.New(b, worker.NoMaintenance(), worker.Concurrency(1), worker.WithLogger(quiet))
	wb.UseFor("rebuild_index", middleware.UniqueJob(""))
	wb.HandleJob("rebuild_index", func(context.Context, queuety.Payload) error { skippedRan.Store(true); return nil })

	first, err := a.Dispatch(ctx, "rebuild_index", nil)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := wa.RunOnce(ctx, time.Minute)
		assert.NoError(t, err)
	}()
	<-entered
	row := lockRow(t, a, "rebuild_index")
	require.NotNil(t, row, "the lock row while the first job runs")
	assert.Len(t, row.Owner, 32)
	assert.True(t, row.ExpiresAt.IsZero(), "no expiry, as Queuety's UniqueJob")

	second, err := b.Dispatch(ctx, "rebuild_index", nil)
	require.NoError(t, err)
	_, err = wb.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.False(t, skippedRan.Load(), "the second job's handler ran while the first held the key")
	j, err := b.Job(ctx, second)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "the skipped job completes")

	close(proceed)
	<-done
	j, err = a.Job(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status)
	assert.Nil(t, lockRow(t, a, "rebuild_index"), "lock released")
}

// TestLocksReleasedWhenHandlerPanics: a panicking handler does not leave
// its UniqueJob or WithoutOverlapping lock behind.
func TestLocksReleasedWhenHandlerPanics(t *testing.T) {
	ctx := context.Background()
	c, _, _ := twoClients(t)
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet))
	w.UseFor("unique_boom", middleware.UniqueJob("k-unique"))
	w.UseFor("overlap_boom", middleware.WithoutOverlapping("k-overlap"))
	boom := func(context.Context, queuety.Payload) error { panic("boom") }
	w.HandleJob("unique_boom", boom)
	w.HandleJob("overlap_boom", boom)
	for _, h := range []string{"unique_boom", "overlap_boom"} {
		_, err := c.Dispatch(ctx, h, nil, queuety.MaxAttempts(1))
		require.NoError(t, err)
	}
	_, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Nil(t, lockRow(t, c, "k-unique"), "UniqueJob lock after a panic")
	assert.Nil(t, lockRow(t, c, "k-overlap"), "WithoutOverlapping lock after a panic")
}
