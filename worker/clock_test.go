package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

var _ worker.TimerClock = (*queuety.FakeClock)(nil)

// TestFakeClockDrivesTimers checks the FakeClock a worker runs on: Advance
// and Set fire the timers made from Timers, in UTC, and Set moves any
// distance either way.
func TestFakeClockDrivesTimers(t *testing.T) {
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	clock := queuety.NewFakeClock(start)
	require.Equal(t, start.UTC(), clock.Now(), "start")
	require.Equal(t, time.UTC, clock.Now().Location(), "location")
	_, ok := any(queuety.SystemClock{}).(worker.TimerClock)
	assert.False(t, ok, "SystemClock is a TimerClock: a default worker would not run on real time")

	timer := clock.Timers().NewTimer(time.Minute)
	assert.Equal(t, start.UTC().Add(59*time.Second), clock.Advance(59*time.Second), "Advance returns the new time")
	select {
	case at := <-timer.Chan():
		require.FailNow(t, "the timer fired early", "at %s", at)
	default:
	}
	clock.Set(start.Add(2 * time.Minute))
	select {
	case at := <-timer.Chan():
		assert.Equal(t, start.UTC().Add(time.Minute), at, "the timer fires at its expiry")
	default:
		require.FailNow(t, "Set past the timer's expiry did not fire it")
	}
	assert.Equal(t, start.UTC().Add(2*time.Minute), clock.Now(), "after Set")

	// Further than a Duration reaches, backwards and forwards.
	for _, to := range []time.Time{time.Date(1500, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2600, 6, 1, 0, 0, 0, 0, time.UTC)} {
		clock.Set(to)
		assert.Equal(t, to, clock.Now(), "after Set")
	}
}

// TestIdleWorkerWakesWhenTheClockMoves checks that an idle worker on a
// fake clock claims a job as soon as the clock makes it due, not after
// its poll interval of real time.
func TestIdleWorkerWakesWhenTheClockMoves(t *testing.T) {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Dispatch(ctx, "later", nil, queuety.Delay(time.Minute))
	require.NoError(t, err)

	ran := make(chan time.Time, 1)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(time.Hour), worker.WithLogger(quiet()))
	w.HandleJob("later", func(context.Context, queuety.Payload) error { ran <- clock.Now(); return nil })
	run := runWorker(t, w)
	// Wait until the worker waits on the clock: with maintenance off, its
	// two timers are the lease keeper's and the idle wait's.
	fake, ok := clock.Timers().(*clockwork.FakeClock)
	require.True(t, ok, "FakeClock.Timers is a clockwork fake clock")
	blockCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	require.NoError(t, fake.BlockUntilContext(blockCtx, 2), "the worker did not go idle")
	// An idle wait later (the poll interval + 10% jitter), the job runs.
	now := clock.Advance(time.Hour + 10*time.Minute)
	assert.Equal(t, now, receive(t, ran, "the job"), "the job ran at")
	require.NoError(t, run.stop(t))
}

// TestLeaseRenewedWhenTheClockMoves checks that a worker on a fake clock
// renews the claims of running jobs when a lease interval passes on the
// clock, so that they do not look stale on it.
func TestLeaseRenewedWhenTheClockMoves(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "long", nil)
	require.NoError(t, err)

	started := make(chan struct{})
	release := make(chan struct{})
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(time.Hour),
		worker.WithLogger(quiet()))
	w.HandleJob("long", func(context.Context, queuety.Payload) error {
		close(started)
		<-release
		return nil
	})
	run := runWorker(t, w)
	receive(t, started, "the job")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Equal(t, start, j.ReservedAt, "claimed at")

	// Each poll moves the clock by a lease interval, in case the keeper had
	// not started waiting yet.
	require.Eventually(t, func() bool {
		clock.Advance(time.Hour)
		j, err := c.Job(ctx, id)
		return err == nil && j.ReservedAt.After(start)
	}, 10*time.Second, 10*time.Millisecond, "the claim was not renewed")
	close(release)
	require.NoError(t, run.stop(t))
	j, err = c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "job after it returned")
}
