package worker_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

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
	c, clock := fakeClockClient(t)
	g := runSwept(t, c, func(w *worker.Worker) {
		w.HandleDeadline("escalate", func(context.Context, queuety.State) error {
			handled.Add(1)
			return nil
		})
	}, worker.NoRetention())
	sweeps, sched := g.sweeps, g.sched
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
	c, clock := fakeClockClient(t)
	g := runSwept(t, c, func(w *worker.Worker) {
		w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
	}, worker.NoRetention())
	sweeps, sched, w := g.sweeps, g.sched, g.w
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
