package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestReclaimedJobKeepsItsNewAttempt covers a job that times out while its
// handler ignores the cancellation, is retried, and is claimed again by the
// same worker while the first attempt still runs. When the first attempt
// finally returns, the second must keep its claim renewed and its context
// alive, and complete the job.
func TestReclaimedJobKeepsItsNewAttempt(t *testing.T) {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Minute), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	require.NoError(t, err)

	started := make(chan int, 2)
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	release := [3]chan struct{}{nil, make(chan struct{}), make(chan struct{})}
	secondCtxErr := make(chan error, 1)
	type outcome struct {
		attempt int
		err     error
	}
	finished := make(chan outcome, 2)
	w := worker.New(c, worker.Concurrency(2), worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond),
		worker.LeaseInterval(10*time.Millisecond), worker.WithLogger(quiet()),
		worker.WithHooks(worker.Hooks{Finished: func(j *driver.Job, err error) { finished <- outcome{j.Attempts, err} }}))
	w.HandleJob("stubborn", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		attempt := info.Attempt
		started <- attempt
		select { // the first attempt ignores its cancelled context
		case <-release[attempt]:
		case <-testDone:
		}
		if attempt == 2 {
			secondCtxErr <- context.Cause(ctx)
		}
		return nil
	})
	run := runWorker(t, w)

	require.Equal(t, 1, receive(t, started, "the start of the first attempt"), "first attempt")
	// The first attempt passes its start-to-close deadline; the watchdog
	// retries the job, and this worker claims it again.
	clock.Advance(2 * time.Minute)
	n, err := deadline.New(c).Timeouts(ctx)
	require.NoError(t, err, "Timeouts")
	require.Equal(t, 1, n, "Timeouts")
	require.Equal(t, 2, receive(t, started, "the start of the second attempt"), "second attempt")

	close(release[1])
	o := receive(t, finished, "the recording of the first attempt's result")
	require.Equal(t, 1, o.attempt, "first outcome: want attempt 1 rejected as stale")
	require.ErrorIs(t, o.err, queuetytype.ErrStaleAttempt, "first outcome: want attempt 1 rejected as stale")

	// The second attempt's claim is still renewed: twice past the stale
	// timeout, stale recovery finds nothing.
	for range 2 {
		clock.Advance(queuetytype.DefaultStaleTimeout)
		now := clock.Now().Truncate(time.Second)
		require.Eventually(t, func() bool {
			j, err := c.Job(ctx, id)
			return err == nil && !j.ReservedAt.Before(now)
		}, 10*time.Second, 10*time.Millisecond, "the claim was not renewed")
		n, err := deadline.New(c).Stale(ctx)
		require.NoError(t, err, "Stale")
		require.Equal(t, 0, n, "Stale")
	}

	close(release[2])
	assert.NoError(t, receive(t, secondCtxErr, "the end of the second attempt"), "the second attempt's context was cancelled")
	o = receive(t, finished, "the recording of the second attempt's result")
	require.Equal(t, 2, o.attempt, "second outcome: want attempt 2 recorded")
	require.NoError(t, o.err, "second outcome: want attempt 2 recorded")
	require.NoError(t, run.stop(t))
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.JobCompleted, j.Status, "job %+v: want completed after 2 attempts", j)
	require.Equal(t, 2, j.Attempts, "job %+v: want completed after 2 attempts", j)
	st := w.Stats()
	assert.Equal(t, int64(2), st.Claimed, "claimed; stats %+v", st)
	assert.Equal(t, int64(1), st.Succeeded, "succeeded; stats %+v", st)
	assert.Equal(t, int64(1), st.Stale, "stale; stats %+v", st)
	assert.Zero(t, st.Failed, "failed; stats %+v", st)
}
