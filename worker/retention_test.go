package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// sweepRecorder is an observer that keeps the sweeps it hears.
type sweepRecorder struct {
	observe.Nop
	mu   sync.Mutex
	rows map[string]int
}

func (r *sweepRecorder) Swept(_ context.Context, s observe.Sweep) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows[s.Name] += s.Rows
}

func (r *sweepRecorder) get(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows[name]
}

// retentionRun starts a long-running worker with opts on a fresh SQLite
// database with a fake clock, after one job ran to completion on it. It
// returns the client, the clock, the completed job, the worker's
// maintenance scheduler and the retention task's sweeps.
func retentionRun(t *testing.T, obs observe.Observer, log *slog.Logger, opts ...worker.Option) (*queuety.Client, *queuety.FakeClock, int64, gocron.Scheduler, <-chan sweep) {
	t.Helper()
	ctx := context.Background()
	var copts []queuety.Option
	if obs != nil {
		copts = append(copts, queuety.WithObserver(obs))
	}
	c, clock := fakeClockClient(t, copts...)
	id, err := c.Dispatch(ctx, "job", nil)
	require.NoError(t, err)
	g := runSwept(t, c, func(w *worker.Worker) {
		w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
	}, append([]worker.Option{worker.WithLogger(log)}, opts...)...)
	require.Eventually(t, func() bool {
		j, err := c.Job(ctx, id)
		return err == nil && j.Status == queuetytype.JobCompleted
	}, 10*time.Second, 5*time.Millisecond, "the job did not complete")
	return c, clock, id, g.sched, g.sweeps
}

// receiveTask waits for the next run of task.
func receiveTask(t *testing.T, swept <-chan sweep, task string) sweep {
	t.Helper()
	for {
		s := receive(t, swept, "a run of "+task)
		if s.task == task {
			return s
		}
	}
}

// waitTaskArmed waits until the scheduler's task named name is due after
// the clock's current time.
func waitTaskArmed(t *testing.T, s gocron.Scheduler, clock *queuety.FakeClock, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, j := range s.Jobs() {
			if j.Name() == name {
				next, err := j.NextRun()
				return err == nil && next.After(clock.Now())
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "%s was not rescheduled", name)
}

// TestRetentionOnByDefault checks that a long-running worker with default
// options deletes a completed job and its log rows once they are older
// than 7 days, logs what it deleted and reports it to the observer, and
// keeps them before.
func TestRetentionOnByDefault(t *testing.T) {
	obs := &sweepRecorder{rows: map[string]int{}}
	var logs syncbuf.Buffer
	c, clock, id, sched, swept := retentionRun(t, obs, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	first := receiveTask(t, swept, worker.SweepRetention)
	require.NoError(t, first.err)
	assert.Zero(t, first.n, "rows deleted at start")

	// Six days on the job stays.
	waitTaskArmed(t, sched, clock, worker.SweepRetention)
	clock.Advance(6 * 24 * time.Hour)
	s := receiveTask(t, swept, worker.SweepRetention)
	require.NoError(t, s.err)
	assert.Zero(t, s.n, "rows deleted after 6 days")
	_, err := c.Job(ctx, id)
	require.NoError(t, err, "the job after 6 days")

	waitTaskArmed(t, sched, clock, worker.SweepRetention)
	clock.Advance(2 * 24 * time.Hour)
	s = receiveTask(t, swept, worker.SweepRetention)
	require.NoError(t, s.err)
	assert.Greater(t, s.n, 1, "rows deleted after 8 days (the job and its logs)")
	_, err = c.Job(ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "the job after 8 days")
	logsLeft, err := c.Logs(ctx, queuetytype.LogFilter{JobID: id})
	require.NoError(t, err)
	assert.Empty(t, logsLeft, "the job's log rows")
	assert.Equal(t, 1, obs.get("retention-completed_jobs"), "observed completed jobs deleted")
	assert.Positive(t, obs.get("retention-logs"), "observed log rows deleted")
	assert.Contains(t, logs.String(), "retention pass deleted old rows")
	assert.Contains(t, logs.String(), "completed_jobs=1")
}

// TestRetentionOptions checks that Retain's ages apply: completed jobs
// kept for an hour go after two.
func TestRetentionOptions(t *testing.T) {
	c, clock, id, sched, swept := retentionRun(t, nil, quiet(),
		worker.Retain(worker.Retention{Completed: time.Hour, Interval: 30 * time.Minute}))
	receiveTask(t, swept, worker.SweepRetention)
	waitTaskArmed(t, sched, clock, worker.SweepRetention)
	clock.Advance(2 * time.Hour)
	s := receiveTask(t, swept, worker.SweepRetention)
	require.NoError(t, s.err)
	_, err := c.Job(context.Background(), id)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "the job two hours on")
}

// TestRetentionOff checks that NoRetention runs no cleaner: a month-old
// completed job stays.
func TestRetentionOff(t *testing.T) {
	c, clock, id, sched, swept := retentionRun(t, nil, quiet(), worker.NoRetention())
	for _, j := range sched.Jobs() {
		assert.NotEqual(t, worker.SweepRetention, j.Name(), "a retention task is scheduled")
	}
	// Every task runs at start; the cleaner is not among them.
	ran := map[string]bool{}
	for len(ran) < len(sweepTasks) {
		s := receive(t, swept, "a maintenance sweep at start")
		assert.NotEqual(t, worker.SweepRetention, s.task, "the cleaner ran")
		ran[s.task] = true
	}
	waitArmed(t, sched, clock)
	clock.Advance(30 * 24 * time.Hour)
	s := receive(t, swept, "a maintenance sweep after the move")
	assert.NotEqual(t, worker.SweepRetention, s.task, "the cleaner ran")
	_, err := c.Job(context.Background(), id)
	require.NoError(t, err, "the job a month on")
}

// TestRetentionRunOnce checks that RunOnce, as cron starts it, runs the
// cleaner when a pass is due and at most once an Interval across the
// workers of a database: a job past its age is kept while a pass ran
// within the interval and deleted by the first RunOnce after it.
func TestRetentionRunOnce(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	obs := &sweepRecorder{rows: map[string]int{}}
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()), queuety.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	once := func(at time.Duration) {
		t.Helper()
		clock.Set(start.Add(at))
		// A new worker each time, as cron starts a new process.
		w := worker.New(c, worker.WithLogger(quiet()),
			worker.Retain(worker.Retention{Completed: time.Hour, Interval: 30 * time.Minute}))
		w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	exists := func(id int64) bool {
		t.Helper()
		_, err := c.Job(ctx, id)
		if errors.Is(err, queuetytype.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	a, err := c.Dispatch(ctx, "job", nil)
	require.NoError(t, err)
	once(0) // a completes; the pass finds nothing old and is due again at 30m
	b, err := c.Dispatch(ctx, "job", nil)
	require.NoError(t, err)
	once(20 * time.Minute) // b completes; no pass
	once(70 * time.Minute)
	assert.False(t, exists(a), "a, 70m old, after the pass due at 30m")
	assert.True(t, exists(b), "b, 50m old")
	once(90 * time.Minute)
	assert.True(t, exists(b), "b, 70m old, before the next pass is due at 100m")
	once(101 * time.Minute)
	assert.False(t, exists(b), "b after the pass due at 100m")
	assert.Equal(t, 2, obs.get("retention-completed_jobs"), "completed jobs the passes reported")
}
