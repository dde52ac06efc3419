package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// abandonWatch is an observer that keeps the gauge of abandoned handlers
// an observe.AbandonObserver is meant to keep, and the limits of the
// claims made once the worker became unhealthy.
type abandonWatch struct {
	observe.Nop
	mu        sync.Mutex
	gauge     int // abandoned handlers still running
	unhealthy int // unhealthy workers
	events    []observe.Abandon
	limits    []int // claim limits while unhealthy
}

func (o *abandonWatch) HandlerAbandoned(_ context.Context, _ observe.Job, a observe.Abandon) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a.Returned {
		o.gauge--
	} else {
		o.gauge++
	}
	switch {
	case a.Unhealthy() && !a.WasUnhealthy():
		o.unhealthy++
	case !a.Unhealthy() && a.WasUnhealthy():
		o.unhealthy--
	}
	o.events = append(o.events, a)
}

func (o *abandonWatch) Claimed(ctx context.Context, c observe.Claim) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unhealthy > 0 {
		o.limits = append(o.limits, c.Limit)
	}
	return ctx
}

func (o *abandonWatch) state() (gauge, unhealthy int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gauge, o.unhealthy
}

// stubborn is a handler that ignores its context: it reports its job id
// on started and returns nil once release is closed.
func stubborn(started chan<- int64, release <-chan struct{}) queuety.JobFunc {
	return func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		started <- info.JobID
		<-release
		return nil
	}
}

// quick is a handler that reports its job id on ran and returns nil.
func quick(ran chan<- int64) queuety.JobFunc {
	return func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		ran <- info.JobID
		return nil
	}
}

// abandonClient opens a client on a fresh MariaDB table set, on a fake
// clock that stands still, so a retried job (due again after its backoff)
// is not claimed again while the test runs.
func abandonClient(t *testing.T, obs observe.Observer) *queuety.Client {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	clock := queuety.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	c, err := queuety.Open(context.Background(), dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()), queuety.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAbandonedHandlersFreeTheirSlots: with concurrency 2, two handlers
// that ignore their context past their start-to-close timeout are
// abandoned: the 5 jobs behind them run, the abandoned jobs are retried
// or buried as a timeout would have them, the abandonment is logged and
// counted (2, then 0 once the handlers return), and the handlers' late
// successes are refused, not recorded.
func TestAbandonedHandlersFreeTheirSlots(t *testing.T) {
	ctx := context.Background()
	obs := &abandonWatch{}
	c := abandonClient(t, obs)
	retried, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Second), queuety.MaxAttempts(3))
	require.NoError(t, err)
	buried, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Second), queuety.MaxAttempts(1))
	require.NoError(t, err)

	logs := &syncbuf.Buffer{}
	started := make(chan int64, 2)
	release := make(chan struct{})
	var releaseOnce sync.Once
	ran := make(chan int64, 5)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.Concurrency(2),
		worker.AbandonGrace(100*time.Millisecond), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.HandleJob("stubborn", stubborn(started, release))
	w.HandleJob("quick", quick(ran))
	runWorker(t, w)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the worker stops
	receive(t, started, "the first stubborn job's start")
	receive(t, started, "the second stubborn job's start")
	for range 5 {
		_, err := c.Dispatch(ctx, "quick", nil)
		require.NoError(t, err)
	}
	for i := range 5 {
		receive(t, ran, "quick job "+string(rune('1'+i)))
	}

	// Both attempts were recorded by the timeout path.
	require.Eventually(t, func() bool { st := w.Stats(); return st.Failed == 2 && st.Succeeded == 5 }, 10*time.Second, 10*time.Millisecond,
		"the abandoned attempts and the quick jobs are recorded")
	j, err := c.Job(ctx, retried)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, j.Status, "a job with attempts left is retried")
	failed, err := c.Logs(ctx, driver.LogFilter{JobID: retried, Event: driver.LogFailed})
	require.NoError(t, err)
	require.Len(t, failed, 1, "the retried job's failed attempt")
	assert.Contains(t, failed[0].ErrorMessage, "start-to-close deadline expired")
	assert.Contains(t, failed[0].ErrorMessage, "abandoned")
	j, err = c.Job(ctx, buried)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "a job on its last attempt is buried")
	assert.Contains(t, j.ErrorMessage, "start-to-close deadline expired")

	st := w.Stats()
	assert.Equal(t, int64(2), st.Abandoned, "Stats.Abandoned")
	assert.Equal(t, int64(5), st.Succeeded, "Stats.Succeeded")
	h := w.Health()
	assert.Equal(t, 2, h.Abandoned, "Health.Abandoned")
	assert.ElementsMatch(t, []int64{retried, buried}, h.AbandonedJobs)
	assert.True(t, h.Healthy(), "2 abandoned handlers are within the default limit (the concurrency)")
	gauge, _ := obs.state()
	assert.Equal(t, 2, gauge, "the abandoned-handlers gauge")
	out := logs.String()
	assert.Equal(t, 2, strings.Count(out, "abandoned it"), "each abandonment is logged:\n%s", out)
	assert.Contains(t, out, "handler=stubborn")

	// The handlers finally return successes: they leave the gauge, and
	// the engine refuses their results.
	releaseOnce.Do(func() { close(release) })
	require.Eventually(t, func() bool { return w.Health().Abandoned == 0 }, 10*time.Second, 10*time.Millisecond, "the abandoned handlers returned")
	gauge, _ = obs.state()
	assert.Equal(t, 0, gauge, "the abandoned-handlers gauge after they returned")
	require.Eventually(t, func() bool { return w.Stats().Stale == 2 }, 10*time.Second, 10*time.Millisecond, "the late results are refused as stale")
	assert.Equal(t, int64(5), w.Stats().Succeeded, "no late success is recorded")
	j, err = c.Job(ctx, retried)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, j.Status, "the late success did not complete the retried job")
	j, err = c.Job(ctx, buried)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "the late success did not complete the buried job")
}

// TestAbandonedStepFailsByTheTimeoutPath: an abandoned workflow step on
// its last attempt is buried with its timeout, and fails its workflow.
func TestAbandonedStepFailsByTheTimeoutPath(t *testing.T) {
	ctx := context.Background()
	c := abandonClient(t, nil)
	started := make(chan int64, 1)
	release := make(chan struct{})
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.Concurrency(1),
		worker.AbandonGrace(50*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleStep("stuck", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		info, _ := queuety.JobInfoFrom(ctx)
		started <- info.JobID
		<-release
		return queuety.State{"late": true}, nil
	})
	id, err := builder.Workflow("wf").Then("stuck", builder.StartToClose(time.Second), builder.Retry(1)).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	runWorker(t, w)
	t.Cleanup(func() { close(release) }) // before the worker stops
	receive(t, started, "the step's start")
	require.Eventually(t, func() bool {
		wf, err := c.Workflow(ctx, id)
		return err == nil && wf.Status == queuetytype.WorkflowFailed
	}, 10*time.Second, 10*time.Millisecond, "the workflow fails by the step's timeout")
	assert.Equal(t, int64(1), w.Stats().Abandoned)
}

// TestTooManyAbandonedHandlersMakeTheWorkerUnhealthy: past MaxAbandoned
// the worker reports itself unhealthy (log, Health, observer), the
// abandoned handlers past the limit hold their slots again, and with
// StopWhenUnhealthy Run stops with ErrUnhealthy.
func TestTooManyAbandonedHandlersMakeTheWorkerUnhealthy(t *testing.T) {
	ctx := context.Background()
	obs := &abandonWatch{}
	c := abandonClient(t, obs)
	for range 2 {
		_, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Second))
		require.NoError(t, err)
	}
	logs := &syncbuf.Buffer{}
	started := make(chan int64, 2)
	release := make(chan struct{})
	var releaseOnce sync.Once
	ran := make(chan int64, 3)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.Concurrency(2),
		worker.AbandonGrace(50*time.Millisecond), worker.MaxAbandoned(1), worker.StopWhenUnhealthy(true),
		worker.ShutdownTimeout(5*time.Second), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.HandleJob("stubborn", stubborn(started, release))
	w.HandleJob("quick", quick(ran))
	run := runWorker(t, w)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the worker stops
	receive(t, started, "the first stubborn job's start")
	receive(t, started, "the second stubborn job's start")

	receive(t, run.done, "Run's return once the worker is unhealthy")
	require.ErrorIs(t, run.err, worker.ErrUnhealthy)
	h := w.Health()
	assert.False(t, h.Healthy(), "Health: %+v", h)
	assert.Equal(t, 2, h.Abandoned)
	assert.Equal(t, 1, h.MaxAbandoned)
	_, unhealthy := obs.state()
	assert.Equal(t, 1, unhealthy, "the observer hears the worker is unhealthy")
	assert.Contains(t, logs.String(), "level=ERROR msg=\"queuety: worker unhealthy")

	// Without StopWhenUnhealthy an unhealthy worker keeps working with the
	// slots it has left: one of two here.
	obs2 := &abandonWatch{}
	c2 := abandonClient(t, obs2)
	logs2 := &syncbuf.Buffer{}
	w2 := worker.New(c2, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.Concurrency(2),
		worker.AbandonGrace(50*time.Millisecond), worker.MaxAbandoned(1), worker.WithLogger(slog.New(slog.NewTextHandler(logs2, nil))))
	w2.HandleJob("stubborn", stubborn(started, release))
	w2.HandleJob("quick", quick(ran))
	for range 2 {
		_, err := c2.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Second))
		require.NoError(t, err)
	}
	runWorker(t, w2)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the workers stop
	receive(t, started, "the third stubborn job's start")
	receive(t, started, "the fourth stubborn job's start")
	require.Eventually(t, func() bool { return !w2.Health().Healthy() }, 10*time.Second, 10*time.Millisecond, "the second worker becomes unhealthy")
	for range 3 {
		_, err := c2.Dispatch(ctx, "quick", nil)
		require.NoError(t, err)
	}
	for range 3 {
		receive(t, ran, "a quick job")
	}
	obs2.mu.Lock()
	limits := append([]int(nil), obs2.limits...)
	obs2.mu.Unlock()
	require.NotEmpty(t, limits, "claims made while unhealthy")
	for _, l := range limits {
		assert.LessOrEqual(t, l, 1, "an unhealthy worker claims only into the slots its abandoned handlers past the limit leave")
	}

	releaseOnce.Do(func() { close(release) })
	require.Eventually(t, func() bool { return w.Health().Healthy() && w2.Health().Healthy() }, 10*time.Second, 10*time.Millisecond,
		"healthy again once the abandoned handlers return")
	require.Eventually(t, func() bool { return strings.Contains(logs2.String(), "worker healthy again") }, 10*time.Second, 10*time.Millisecond)
}

// TestShutdownDoesNotWaitForAbandonedHandlers: a worker's graceful stop
// returns at once, without an error, when its only running handler was
// abandoned earlier: the handler's attempt is recorded already.
func TestShutdownDoesNotWaitForAbandonedHandlers(t *testing.T) {
	ctx := context.Background()
	c := abandonClient(t, nil)
	id, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Second))
	require.NoError(t, err)
	started := make(chan int64, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.AbandonGrace(50*time.Millisecond),
		worker.ShutdownTimeout(20*time.Second), worker.HardStopTimeout(20*time.Second), worker.WithLogger(quiet()))
	w.HandleJob("stubborn", stubborn(started, release))
	run := runWorker(t, w)
	receive(t, started, "the stubborn job's start")
	require.Eventually(t, func() bool { return w.Health().Abandoned == 1 && w.Stats().Failed == 1 }, 10*time.Second, 10*time.Millisecond,
		"the handler is abandoned and its attempt recorded")

	run.cancel()
	select {
	case <-run.done:
		assert.NoError(t, run.err, "the abandoned handler is no reason for a ShutdownError")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Run waited for an abandoned handler")
	}
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, j.Status, "the abandoned job went back by the timeout path")
}
