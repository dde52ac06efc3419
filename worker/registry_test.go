package worker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestWorkerRegistry checks a worker's row in the worker registry on both
// stores: it registers when Run starts, renews the row (with the jobs it
// runs) at every lease interval of its clock while it runs jobs (every
// IdleHeartbeatInterval while idle), shows as gone to a reader
// whose clock is past three missed renewals, and removes the row when it
// stops.
func TestWorkerRegistry(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
		clock := queuety.NewFakeClock(start)
		c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()

		beats := make(chan error, 16)
		started := make(chan int64, 1)
		release := make(chan struct{})
		const interval = 2 * time.Second
		w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.Queues("critical", "default"),
			worker.Concurrency(3), worker.LeaseInterval(interval), worker.PollInterval(10*time.Millisecond),
			worker.OnHeartbeat(func(err error) { beats <- err }))
		w.HandleJob("hold", func(ctx context.Context, _ queuety.Payload) error {
			info, _ := queuety.JobInfoFrom(ctx)
			started <- info.JobID
			<-release
			return nil
		})
		w.HandleJob("other", func(context.Context, queuety.Payload) error { return nil })
		run := runWorker(t, w)
		require.NoError(t, receive(t, beats, "the registration"))

		list, err := c.Workers(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		got := list[0]
		host, _ := os.Hostname()
		assert.Equal(t, worker.RegistryID(w), got.ID)
		assert.Equal(t, host, got.Host)
		assert.Equal(t, os.Getpid(), got.PID)
		assert.Equal(t, queuety.Version(), got.Version)
		assert.Equal(t, []string{"critical", "default"}, got.Queues)
		assert.Equal(t, []string{"hold", "other"}, got.Handlers)
		assert.Equal(t, 3, got.Concurrency)
		assert.Empty(t, got.Jobs)
		assert.Equal(t, start, got.StartedAt)
		assert.Equal(t, start, got.LastHeartbeat)
		assert.Equal(t, worker.IdleHeartbeatInterval, got.HeartbeatInterval, "an idle worker renews its row less often, and says so")
		assert.False(t, got.Gone)

		// A job starts; the next renewal lists it.
		id, err := c.Dispatch(ctx, "hold", nil, queuety.OnQueue("default"))
		require.NoError(t, err)
		require.Equal(t, id, receive(t, started, "the job"))
		renewed := clock.Advance(interval)
		require.NoError(t, receive(t, beats, "the renewal"))
		list, err = c.Workers(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, []int64{id}, list[0].Jobs, "the jobs the worker runs")
		assert.Equal(t, renewed, list[0].LastHeartbeat)
		assert.Equal(t, interval, list[0].HeartbeatInterval, "a worker running jobs renews its row every lease interval")
		assert.Equal(t, start, list[0].StartedAt, "started_at is kept")
		assert.False(t, list[0].Gone)

		// Three missed renewals later, by another process's clock, it is gone.
		for _, tc := range []struct {
			after time.Duration
			gone  bool
		}{{queuetytype.GoneAfter * interval, false}, {queuetytype.GoneAfter*interval + time.Millisecond, true}} {
			later, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(renewed.Add(tc.after))), queuety.WithLogger(quiet()))
			require.NoError(t, err)
			list, err = later.Workers(ctx)
			later.Close()
			require.NoError(t, err)
			require.Len(t, list, 1)
			assert.Equal(t, tc.gone, list[0].Gone, "gone %s after the last renewal", tc.after)
		}

		close(release)
		require.NoError(t, run.stop(t))
		list, err = c.Workers(ctx)
		require.NoError(t, err)
		assert.Empty(t, list, "a worker that stopped cleanly is deregistered")
	})
}
