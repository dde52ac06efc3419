package worker_test

import (
	"context"
	"github.com/queuety/queuety-go/queuetytype"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestStoppingWorkerKeepsClaimsUntilHandlersReturn covers a graceful stop
// whose handlers finish after the shutdown grace period but before the
// hard stop, while a healthy second worker sweeps for stale claims: the
// stopping worker keeps renewing the claims of its running handlers, so
// the second worker never takes their jobs over, every job runs once and
// every success is recorded.
func TestStoppingWorkerKeepsClaimsUntilHandlersReturn(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	const lease = time.Second
	open := func() *queuety.Client {
		c, err := queuety.Open(ctx, dsn, queuety.WithLeaseTimeout(lease), queuety.WithLogger(quiet()))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	ca, cb := open(), open()
	const n = 3
	ids := make([]int64, n)
	for i := range ids {
		var err error
		ids[i], err = ca.Dispatch(ctx, "slow", nil)
		require.NoError(t, err)
	}

	var mu sync.Mutex
	runs := map[int64][]string{} // job id: the workers that ran it
	ran := func(ctx context.Context, who string) {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		runs[info.JobID] = append(runs[info.JobID], who)
		mu.Unlock()
	}
	started := make(chan struct{}, n)
	cancelled := make(chan struct{}, n)
	release := make(chan struct{})
	a := worker.New(ca, worker.NoMaintenance(), worker.Concurrency(n), worker.PollInterval(10*time.Millisecond),
		worker.LeaseInterval(50*time.Millisecond), worker.ShutdownTimeout(100*time.Millisecond),
		worker.HardStopTimeout(time.Minute), worker.WithLogger(quiet()))
	a.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
		ran(ctx, "a")
		started <- struct{}{}
		<-ctx.Done() // the grace period is over
		cancelled <- struct{}{}
		<-release // finishes before the hard stop, ignoring the cancellation
		return nil
	})
	runA := runWorker(t, a)
	defer func() {
		runA.cancel()
		select {
		case <-release:
		default:
			close(release)
		}
		<-runA.done
	}()
	for range n {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the first worker did not start every job")
		}
	}

	swept := make(chan time.Time, 1000)
	b := worker.New(cb, worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(50*time.Millisecond),
		worker.Maintenance(worker.Intervals{Stale: 50 * time.Millisecond, Watchdog: -1, WaitTimer: -1, Deadlines: -1, ScheduleIdle: -1}),
		worker.WithLogger(quiet()),
		worker.WithHooks(worker.Hooks{Swept: func(task string, _ int, _ error) {
			if task == deadline.SweepStale {
				swept <- time.Now()
			}
		}}))
	b.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
		ran(ctx, "b")
		return nil
	})
	runB := runWorker(t, b)
	defer runB.stop(t)

	runA.cancel() // a graceful stop: the handlers outlive the grace period
	for range n {
		select {
		case <-cancelled:
		case <-time.After(30 * time.Second):
			t.Fatal("the handlers were not cancelled at the end of the grace period")
		}
	}
	// Two stale sweeps of the second worker completed after the claims
	// would have gone stale without renewals.
	staleAt := time.Now().Add(2 * lease)
	for seen := 0; seen < 2; {
		select {
		case at := <-swept:
			if at.After(staleAt) {
				seen++
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the second worker does not sweep")
		}
	}
	close(release)
	select {
	case <-runA.done:
		require.NoError(t, runA.err, "the stopping worker's Run")
	case <-time.After(30 * time.Second):
		t.Fatal("the stopping worker did not return once its handlers had")
	}
	for _, id := range ids {
		j, err := ca.Job(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "job %d", id)
		assert.Equal(t, 1, j.Attempts, "attempts of job %d", id)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		assert.Equal(t, []string{"a"}, runs[id], "the runs of job %d", id)
	}
}
