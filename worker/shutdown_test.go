package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestShutdownIsBoundedWhenAHandlerIgnoresItsContext: a handler that never
// looks at its context does not keep Run from returning. After the grace
// period and the hard-stop period Run returns a *ShutdownError naming the
// job, which stays claimed; when the handler finally returns, its result
// is still recorded, because its attempt still owns the job.
func TestShutdownIsBoundedWhenAHandlerIgnoresItsContext(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "stubborn", nil)
	require.NoError(t, err)

	started := make(chan struct{})
	release := make(chan struct{})
	returned := make(chan struct{})
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()),
		worker.ShutdownTimeout(50*time.Millisecond), worker.HardStopTimeout(100*time.Millisecond))
	w.HandleJob("stubborn", func(context.Context, queuety.Payload) error {
		close(started)
		<-release // ignores its context
		close(returned)
		return nil
	})
	run := runWorker(t, w)
	<-started
	run.cancel()

	var runErr error
	select {
	case <-run.done:
		runErr = run.err
	case <-time.After(10 * time.Second):
		close(release)
		require.FailNow(t, "Run did not return within 10 s of cancellation")
	}
	var se *worker.ShutdownError
	require.True(t, errors.As(runErr, &se), "Run returned %v, want a *ShutdownError", runErr)
	assert.Equal(t, []int64{id}, se.JobIDs, "abandoned jobs")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobProcessing, j.Status, "the abandoned job stays claimed for lease expiry")

	close(release)
	<-returned
	require.Eventually(t, func() bool {
		j, err := c.Job(ctx, id)
		return err == nil && j.Status == queuetytype.JobCompleted
	}, 10*time.Second, 10*time.Millisecond, "the late result of the still-owning attempt is recorded")
}

// TestRunOnceReportsAbandonedHandlers: once mode is bounded the same way
// and reports the abandoned handler in its error.
func TestRunOnceReportsAbandonedHandlers(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "stubborn", nil)
	require.NoError(t, err)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w := worker.New(c, worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()),
		worker.ShutdownTimeout(50*time.Millisecond), worker.HardStopTimeout(50*time.Millisecond))
	w.HandleJob("stubborn", func(context.Context, queuety.Payload) error { <-release; return nil })
	start := time.Now()
	_, err = w.RunOnce(ctx, 100*time.Millisecond)
	assert.Less(t, time.Since(start), 10*time.Second, "RunOnce took too long")
	var se *worker.ShutdownError
	require.True(t, errors.As(err, &se), "RunOnce returned %v, want a *ShutdownError", err)
	assert.Equal(t, []int64{id}, se.JobIDs, "abandoned jobs")
}
