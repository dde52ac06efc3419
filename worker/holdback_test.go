package worker_test

import (
	"context"
	"database/sql"
	"github.com/queuety/queuety-go/queuetytype"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestStaleRecoveryWaitsOutAWriteOutage covers a write outage longer than
// the lease timeout (here the jobs table is away): no worker can renew its
// claims meanwhile. Once writes work again, a second worker whose own
// writes failed too must not recover the first worker's claim as stale
// before the first worker has had the time to renew it, even when its
// stale sweep comes first; the job runs once.
func TestStaleRecoveryWaitsOutAWriteOutage(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	const lease = time.Second
	open := func() *queuety.Client {
		c, err := queuety.Open(ctx, dsn, queuety.WithLeaseTimeout(lease), queuety.WithLogger(quiet()))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	ca, cb := open(), open()
	id, err := ca.Dispatch(ctx, "work", nil)
	require.NoError(t, err)
	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	jobs, away := prefix+"queuety_jobs", prefix+"queuety_jobs_away"
	moved := false
	defer func() {
		if moved {
			_, _ = admin.Exec("RENAME TABLE " + away + " TO " + jobs)
		}
	}()

	started := make(chan struct{})
	finish := make(chan struct{})
	cancelled := make(chan error, 1)
	finished := make(chan error, 1)
	var holdRenewal atomic.Bool
	renewalHeld := make(chan struct{}, 1)
	letRenew := make(chan struct{})
	renewed := make(chan struct{}, 100)
	a := worker.New(ca, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(100*time.Millisecond),
		worker.WithLogger(quiet()),
		worker.WithHooks(worker.Hooks{Finished: func(_ *driver.Job, err error) { finished <- err }}),
		worker.OnRenewal(func(running int) {
			if running > 0 && holdRenewal.CompareAndSwap(true, false) {
				renewalHeld <- struct{}{}
				<-letRenew
			}
		}, func(int) {
			select {
			case renewed <- struct{}{}:
			default:
			}
		}))
	a.HandleJob("work", func(ctx context.Context, _ queuety.Payload) error {
		close(started)
		select {
		case <-finish:
			return nil
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return context.Cause(ctx)
		}
	})
	runA := runWorker(t, a)
	defer runA.stop(t)
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	wait(started, "the job did not start")

	type sweep struct {
		at  time.Time
		n   int
		err error
	}
	swept := make(chan sweep, 10000)
	var bRan atomic.Int32
	b := worker.New(cb, worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()),
		worker.Maintenance(worker.Intervals{Stale: 20 * time.Millisecond, Watchdog: -1, WaitTimer: -1, Deadlines: -1, ScheduleIdle: -1}),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task == deadline.SweepStale {
				swept <- sweep{time.Now(), n, err}
			}
		}}))
	b.HandleJob("work", func(context.Context, queuety.Payload) error { bRan.Add(1); return nil })
	runB := runWorker(t, b)
	defer runB.stop(t)

	recovered := 0
	// sweepsUntil waits for n stale sweeps of the second worker that
	// ended after from, with or without an error.
	sweepsUntil := func(from time.Time, n int, failing bool) {
		t.Helper()
		for seen := 0; seen < n; {
			select {
			case s := <-swept:
				recovered += s.n
				if s.at.After(from) && (s.err != nil) == failing {
					seen++
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the second worker does not sweep")
			}
		}
	}
	sweepsUntil(time.Time{}, 2, false)

	// The outage: no write to the jobs table works, for twice the lease
	// timeout, as the second worker's failing sweeps show.
	_, err = admin.Exec("RENAME TABLE " + jobs + " TO " + away)
	require.NoError(t, err)
	moved = true
	sweepsUntil(time.Now().Add(2*lease), 1, true)

	// Writes work again. The first worker's next renewal waits until the
	// second worker has swept twice.
	holdRenewal.Store(true)
	_, err = admin.Exec("RENAME TABLE " + away + " TO " + jobs)
	require.NoError(t, err)
	moved = false
	wait(renewalHeld, "the first worker did not renew")
	sweepsUntil(time.Now(), 2, false)
	for len(renewed) > 0 {
		<-renewed
	}
	close(letRenew)
	wait(renewed, "the first worker's renewal did not end")
	// The second worker's sweeps go on past the hold-back.
	sweepsUntil(time.Now().Add(lease), 2, false)
	assert.Zero(t, recovered, "claims recovered as stale")

	close(finish)
	select {
	case err := <-cancelled:
		t.Fatalf("the running handler was cancelled: %v", err)
	case err := <-finished:
		require.NoError(t, err, "the success is recorded")
	case <-time.After(30 * time.Second):
		t.Fatal("the success was not recorded")
	}
	j, err := ca.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status)
	assert.Equal(t, 1, j.Attempts, "attempts")
	assert.Zero(t, bRan.Load(), "runs by the second worker")
}
