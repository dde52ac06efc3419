package worker_test

import (
	"context"
	"github.com/queuety/queuety-go/queuetytype"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestNoTakenAwayWarningForOwnCompletion covers a renewal that lists a
// running attempt whose handler then returns and whose success is
// recorded before the renewal reads the job: the job is completed by that
// very attempt, so the worker must not warn that it was taken away.
func TestNoTakenAwayWarningForOwnCompletion(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "once", nil)
	require.NoError(t, err)

	started := make(chan struct{})
	proceed := make(chan struct{})
	listed := make(chan struct{})  // the keeper listed the running attempt
	renew := make(chan struct{})   // let that renewal go on
	renewed := make(chan struct{}) // and has been acted on
	finished := make(chan error, 1)
	var calls atomic.Int32
	logs := &syncbuf.Buffer{}
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(10*time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		worker.WithHooks(worker.Hooks{Finished: func(_ *driver.Job, err error) { finished <- err }}),
		worker.OnRenewal(func(running int) {
			if running > 0 && calls.CompareAndSwap(0, 1) {
				close(listed)
				<-renew
			}
		}, func(int) {
			if calls.CompareAndSwap(1, 2) {
				close(renewed)
			}
		}))
	w.HandleJob("once", func(context.Context, queuety.Payload) error {
		close(started)
		<-proceed
		return nil
	})
	run := runWorker(t, w)
	defer run.stop(t)

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	wait(started, "the job did not start")
	wait(listed, "the lease keeper did not list the running attempt")
	close(proceed) // the handler returns and its success is recorded
	select {
	case err := <-finished:
		require.NoError(t, err, "the success is recorded")
	case <-time.After(30 * time.Second):
		t.Fatal("the success was not recorded")
	}
	close(renew) // the renewal now finds the job completed by its own attempt
	wait(renewed, "the lease keeper did not finish the renewal")

	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobCompleted, j.Status)
	assert.Equal(t, 1, j.Attempts, "attempts")
	assert.False(t, strings.Contains(logs.String(), "taken away"), "log:\n%s", logs.String())
}
