package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestScaleTarget is Queuety's WorkerPoolScalePolicy table.
func TestScaleTarget(t *testing.T) {
	for _, c := range []struct {
		demand, current, min, max int
		grow, shrink              bool
		want                      int
	}{
		{0, 1, 1, 4, true, true, 1},
		{3, 1, 1, 4, true, true, 3},
		{9, 1, 1, 4, true, true, 4},
		{0, 4, 2, 6, true, true, 2},
		{0, 4, 2, 6, true, false, 4},  // may not shrink: stays
		{9, 2, 2, 6, false, true, 2},  // may not grow: stays
		{9, 1, 2, 6, false, true, 2},  // never below min
		{1, 5, 2, 6, false, false, 5}, // neither
	} {
		got := worker.ScaleTarget(c.demand, c.current, c.min, c.max, c.grow, c.shrink)
		assert.Equal(t, c.want, got, "%+v", c)
	}
}

// TestAdaptiveConcurrencyScales: a worker with AdaptiveConcurrency(1, 4)
// runs one handler at a time while it has not looked at its backlog; at
// its first resize, with 8 jobs waiting, it runs 4 at once; once the
// queue is empty it stays at 4 for the idle grace and then goes back to
// 1. The scaler runs on the client's fake clock, moved by the test.
func TestAdaptiveConcurrencyScales(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn, _ := testdb.DSN(t)
	clock := queuety.NewFakeClock(time.Now().UTC())
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	armed := make(chan struct{}, 16)
	scaled := make(chan [2]int, 16)
	finished := make(chan struct{}, 16)
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()),
		worker.AdaptiveConcurrency(1, 4), worker.ScaleInterval(5*time.Second), worker.ScaleIdleGrace(15*time.Second),
		worker.OnScale(func() { armed <- struct{}{} }, func(from, to int) { scaled <- [2]int{from, to} }),
		worker.WithHooks(worker.Hooks{Finished: func(*queuetytype.Job, error) { finished <- struct{}{} }}))
	started, release := make(chan struct{}, 16), make(chan struct{})
	w.HandleJob("provider_call", func(context.Context, queuety.Payload) error {
		started <- struct{}{}
		<-release
		return nil
	})
	for i := range 8 {
		_, err := c.Dispatch(ctx, "provider_call", queuety.State{"i": i})
		require.NoError(t, err)
	}
	run := runWorker(t, w)

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	resize := func() [2]int {
		t.Helper()
		wait(armed, "the scaler to arm its timer")
		clock.Advance(5 * time.Second)
		select {
		case s := <-scaled:
			return s
		case <-time.After(30 * time.Second):
			t.Fatal("no resize")
		}
		return [2]int{}
	}

	wait(started, "the first handler")
	assert.Equal(t, 1, w.Concurrency(), "at min before the first resize")
	assert.Equal(t, [2]int{1, 4}, resize(), "8 jobs waiting: up to max")
	for range 3 {
		wait(started, "the handlers the larger concurrency starts")
	}
	assert.Len(t, started, 0, "never more than 4 at once")
	close(release)
	for range 8 {
		wait(finished, "every job to finish")
	}
	assert.Equal(t, [2]int{4, 4}, resize(), "queue empty 5 s after jobs last waited: within the idle grace")
	assert.Equal(t, [2]int{4, 4}, resize(), "10 s: within the idle grace")
	assert.Equal(t, [2]int{4, 1}, resize(), "15 s: back to min")
	assert.Equal(t, 1, w.Concurrency())
	require.NoError(t, run.stop(t))
	assert.Equal(t, 4, w.Concurrency(), "RunOnce runs at max")
}
