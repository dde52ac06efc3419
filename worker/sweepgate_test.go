package worker_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestGatedDeadlineSweepFindsLaterWorkflow: behind the sweep gate, the
// deadline sweep still fails a workflow dispatched after the gate's last
// read once its deadline passed ("Deadline exceeded"), and its deadline
// handler runs exactly once, however many sweeps follow.
func TestGatedDeadlineSweepFindsLaterWorkflow(t *testing.T) {
	ctx := context.Background()
	var handled atomic.Int32
	g := startGated(t, func(w *worker.Worker) {
		w.HandleDeadline("escalate", func(context.Context, queuety.State) error {
			handled.Add(1)
			return nil
		})
	})
	c, clock, sweeps, sched := g.c, g.clock, g.sweeps, g.sched
	for task, n := range receiveSweeps(t, sweeps) { // the gate read once: nothing due
		assert.Zero(t, n, "%s at start", task)
	}
	waitArmed(t, sched, clock)

	// Dispatched after the gate's read; its step has no handler here.
	late, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "late", ExecutionTimeout: time.Minute, OnDeadline: "escalate",
		Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "unhandled"}}}, nil)
	require.NoError(t, err)
	clock.Advance(66 * time.Second)
	ran := receiveSweeps(t, sweeps)
	assert.Equal(t, 1, ran["workflow-deadlines"], "workflows expired")
	wf, err := c.Workflow(ctx, late)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "late workflow")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "late workflow")
	require.Eventually(t, func() bool { return handled.Load() == 1 }, 10*time.Second, 5*time.Millisecond, "the deadline handler did not run")

	for range 2 {
		waitArmed(t, sched, clock)
		clock.Advance(66 * time.Second)
		for task, n := range receiveSweeps(t, sweeps) {
			assert.Zero(t, n, "%s after the workflow expired", task)
		}
	}
	assert.Equal(t, int32(1), handled.Load(), "deadline handler runs")
}

// TestGatedRegistryPrune: with the sweep gate on, the registry's renewal
// still removes a worker gone for longer than the retention, within a
// prune period, going by the gate's read.
func TestGatedRegistryPrune(t *testing.T) {
	ctx := context.Background()
	g := startGated(t, func(w *worker.Worker) {
		w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
	})
	c, clock, sweeps, sched, w := g.c, g.clock, g.sweeps, g.sched, g.w
	receiveSweeps(t, sweeps) // the gate read once: no worker gone
	waitArmed(t, sched, clock)

	gone := &queuetytype.Worker{ID: "gone-1", Host: "h", Version: "v", HeartbeatInterval: time.Second,
		StartedAt: clock.Now().Add(-3 * time.Hour), LastHeartbeat: clock.Now().Add(-2 * time.Hour)}
	require.NoError(t, clientseam.Engine(c).Store().InTx(ctx, func(tx driver.Tx) error { return tx.WorkerSave(ctx, gone) }))
	ids := func() []string {
		t.Helper()
		list, err := c.Workers(ctx)
		require.NoError(t, err)
		var out []string
		for _, r := range list {
			out = append(out, r.ID)
		}
		return out
	}
	require.Contains(t, ids(), "gone-1")
	// Six seconds at a time, so that the wait-timer sweep reads the gate
	// again at each step and a prune after the registration's minute uses
	// a read a few seconds old, which saw the gone row.
	for range 12 {
		clock.Advance(6 * time.Second)
		for s := receive(t, sweeps, "the wait-timer sweep"); s.task != "wait-timers"; s = receive(t, sweeps, "the wait-timer sweep") {
		}
	}
	require.Eventually(t, func() bool { return !slices.Contains(ids(), "gone-1") }, 10*time.Second, 10*time.Millisecond, "the gone worker's row was not removed")
	assert.Equal(t, []string{worker.RegistryID(w)}, ids(), "the live worker stays")
}

// gated is a worker started by startGated, with what its tests watch.
type gated struct {
	c      *queuety.Client
	clock  *queuety.FakeClock
	w      *worker.Worker
	sweeps <-chan sweep // every sweep's report but the schedule tick's
	sched  gocron.Scheduler
}

// startGated runs a worker with the default maintenance (retention off)
// on an SQLite store and a fake clock, its handlers registered by
// register, and stops it when the test ends.
func startGated(t *testing.T, register func(*worker.Worker)) gated {
	t.Helper()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	c, err := queuety.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	sweeps := make(chan sweep, 100)
	started := make(chan gocron.Scheduler, 1)
	w := worker.New(c, worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()), worker.NoRetention(),
		worker.OnMaintenanceStarted(func(s gocron.Scheduler) { started <- s }),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task != "schedule-tick" {
				sweeps <- sweep{task, n, err}
			}
		}}))
	register(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return gated{c: c, clock: clock, w: w, sweeps: sweeps, sched: receive(t, started, "the maintenance scheduler")}
}
