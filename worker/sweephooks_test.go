package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// fakeClockClient opens a client on a fresh SQLite database with a fake
// clock at 2030-01-01 09:00 UTC and a quiet logger (opts come after
// them), and closes it when the test ends.
func fakeClockClient(t *testing.T, opts ...queuety.Option) (*queuety.Client, *queuety.FakeClock) {
	t.Helper()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	all := append([]queuety.Option{queuety.WithClock(clock), queuety.WithLogger(quiet())}, opts...)
	c, err := queuety.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "q.db"), all...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, clock
}

// sweptWorker is a long-running worker started by runSwept, with what its
// tests watch.
type sweptWorker struct {
	w      *worker.Worker
	sweeps <-chan sweep // every sweep's report but the schedule tick's
	sched  gocron.Scheduler
	// stop cancels Run and requires it to return nil; it runs again,
	// doing nothing, when the test ends.
	stop func()
}

// runSwept runs a quiet worker on c that polls every 20 ms and reports
// its sweeps, its handlers registered by register and opts applied after
// those options, and waits for its maintenance scheduler to start.
func runSwept(t *testing.T, c *queuety.Client, register func(*worker.Worker), opts ...worker.Option) sweptWorker {
	t.Helper()
	sweeps := make(chan sweep, 100)
	started := make(chan gocron.Scheduler, 1)
	all := append([]worker.Option{worker.PollInterval(20 * time.Millisecond), worker.WithLogger(quiet()),
		worker.OnMaintenanceStarted(func(s gocron.Scheduler) { started <- s }),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task != "schedule-tick" {
				sweeps <- sweep{task, n, err}
			}
		}})}, opts...)
	w := worker.New(c, all...)
	register(w)
	run := runWorker(t, w)
	stop := func() { require.NoError(t, run.stop(t)) }
	t.Cleanup(stop)
	return sweptWorker{w: w, sweeps: sweeps, sched: receive(t, started, "the maintenance scheduler"), stop: stop}
}
