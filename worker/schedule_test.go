package worker_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestRunTicksSchedulesWhenDue checks that a long-running worker fires a
// schedule at its due time, not on a fixed 30 s or 60 s tick: on a fake
// clock, the schedule tick of a schedule due every 2 s sleeps until the
// next due time, and the schedule fires three times, 2 s apart.
func TestRunTicksSchedulesWhenDue(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Schedule("beat", nil).Every(2 * time.Second).Save(ctx)
	require.NoError(t, err)

	ran := make(chan time.Time, 10)
	armed := make(chan time.Duration, 10)
	ticked := make(chan sweep, 10)
	w := worker.New(c, worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()),
		worker.OnTickArmed(func(d time.Duration) { armed <- d }),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task == "schedule-tick" {
				ticked <- sweep{task, n, err}
			}
		}}))
	w.HandleJob("beat", func(context.Context, queuety.Payload) error { ran <- clock.Now(); return nil })
	run := runWorker(t, w)

	// The tick at start finds nothing due (the first firing is at +2 s).
	first := receive(t, ticked, "the schedule tick at start")
	require.NoError(t, first.err, "schedule tick at start")
	require.Zero(t, first.n, "schedules fired at start")
	// Each time the tick sleeps, move the clock to its wake-up time. The
	// tick sleeps until the next due time (± 1% jitter), never for the
	// 30 s idle cap while a schedule is due sooner.
	const maxWait = 2*time.Second + 2*time.Second/100
	var times []time.Time
	for len(times) < 3 {
		require.LessOrEqual(t, clock.Now().Sub(start), 20*time.Second, "fired %d times in 20 s of clock time", len(times))
		wait := receive(t, armed, "the schedule tick to sleep")
		require.GreaterOrEqual(t, wait, time.Duration(0), "tick sleep")
		require.LessOrEqual(t, wait, maxWait, "tick sleep with a schedule due within 2 s")
		clock.Advance(wait)
		tick := receive(t, ticked, "the schedule tick")
		require.NoError(t, tick.err, "schedule tick")
		if tick.n == 0 {
			continue // woke up just before the due time (jitter)
		}
		require.Equal(t, 1, tick.n, "schedules fired by one tick")
		times = append(times, receive(t, ran, "the scheduled job"))
	}
	require.NoError(t, run.stop(t))

	require.LessOrEqual(t, times[2].Sub(start), 10*time.Second, "three firings of a 2 s schedule took too long")
	for i, at := range times {
		due := start.Add(time.Duration(i+1) * 2 * time.Second)
		assert.False(t, at.Before(due), "firing %d at %s, before its due time %s", i, at, due)
		assert.LessOrEqual(t, at.Sub(due), 100*time.Millisecond, "firing %d at %s, late for its due time %s", i, at, due)
	}
	for i := 1; i < len(times); i++ {
		gap := times[i].Sub(times[i-1])
		assert.GreaterOrEqual(t, gap, time.Second, "gap between firings %d and %d", i-1, i)
		assert.LessOrEqual(t, gap, 4*time.Second, "gap between firings %d and %d", i-1, i)
	}
}

// sweep is one maintenance run reported by the Swept hook.
type sweep struct {
	task string
	n    int
	err  error
}

// receive returns the next value from ch, failing the test if none comes
// within 10 s.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, what+" did not happen within 10 s")
		var zero T
		return zero
	}
}

// TestScheduleSavedIntoARunningWorkerFiresEverySlot saves a 1-second
// schedule through the client of a worker whose schedule tick is asleep
// (nothing was due): the save wakes the tick at once, and every one of the
// next 60 slots fires on its own, none merged, on a fake clock moved to
// each wake-up of the tick.
func TestScheduleSavedIntoARunningWorkerFiresEverySlot(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	obs := &missedSlots{}
	logs := &syncbuf.Buffer{}
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock),
		queuety.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), queuety.WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()

	armed := make(chan time.Duration, 10)
	ticked := make(chan sweep, 10)
	w := scheduleWorker(c, armed, ticked)
	run := runWorker(t, w)

	first := receive(t, ticked, "the schedule tick at start")
	require.NoError(t, first.err, "schedule tick at start")
	require.Zero(t, first.n, "schedules fired at start")
	receive(t, armed, "the schedule tick to sleep") // nothing is due: it sleeps its idle period

	_, err = c.Schedule("beat", nil).Every(time.Second).Save(ctx)
	require.NoError(t, err)
	// The save wakes the tick at once, without the clock moving: it finds
	// nothing due yet and sleeps until the first slot, a second away.
	woken := receive(t, ticked, "the schedule tick after the save")
	require.NoError(t, woken.err, "schedule tick after the save")
	wait := receive(t, armed, "the schedule tick to sleep until the first slot")
	require.LessOrEqual(t, wait, time.Second+time.Second/100, "tick sleep with a slot due in 1 s")

	fired := 0
	for clock.Now().Before(start.Add(60 * time.Second)) {
		clock.Advance(wait)
		tick := receive(t, ticked, "the schedule tick")
		require.NoError(t, tick.err, "schedule tick")
		require.LessOrEqual(t, tick.n, 1, "firings of one tick at %s", clock.Now())
		fired += tick.n
		wait = receive(t, armed, "the schedule tick to sleep")
	}
	require.NoError(t, run.stop(t))

	assert.Equal(t, 60, fired, "slots fired in the first 60 s after the save")
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "beat", Limit: 1000})
	require.NoError(t, err)
	assert.Len(t, jobs, 60, "jobs the schedule dispatched")
	assert.Zero(t, obs.missed.Load(), "slots reported missed")
	assert.NotContains(t, logs.String(), "slots missed", "log")
}

// TestScheduleSavedByAnotherProcessIsSeenWithinTheIdlePeriod saves a
// 1-second schedule through a client that shares no wake-ups with the
// worker's (as another process would): the worker's tick, asleep with
// nothing due, wakes within its idle period (2 s here) and fires it.
// The slot that passed in between is merged into that firing, as
// CatchUpOnce says, and reported: a warning naming the schedule and the
// Missed count of the tick's sweep.
func TestScheduleSavedByAnotherProcessIsSeenWithinTheIdlePeriod(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	obs := &missedSlots{}
	logs := &syncbuf.Buffer{}
	path := filepath.Join(t.TempDir(), "q.db")
	c, err := queuety.Open(ctx, "sqlite://"+path, queuety.WithClock(clock),
		queuety.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), queuety.WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()
	other, err := queuety.Open(ctx, "sqlite://"+path+"?busy_timeout=5000", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer other.Close()

	armed := make(chan time.Duration, 10)
	ticked := make(chan sweep, 10)
	w := scheduleWorker(c, armed, ticked, worker.Maintenance(worker.Intervals{Jitter: -1, ScheduleIdle: 2 * time.Second}))
	run := runWorker(t, w)

	require.NoError(t, receive(t, ticked, "the schedule tick at start").err, "schedule tick at start")
	idle := receive(t, armed, "the schedule tick to sleep")
	require.Equal(t, 2*time.Second, idle, "tick sleep with no schedule")
	require.LessOrEqual(t, idle, 2*time.Second, "idle period")

	_, err = other.Schedule("beat", nil).Every(time.Second).Save(ctx) // first slot 09:00:01
	require.NoError(t, err)
	clock.Advance(idle) // 09:00:02: slots :01 and :02 are due
	tick := receive(t, ticked, "the schedule tick after its idle period")
	require.NoError(t, tick.err, "schedule tick")
	assert.Equal(t, 1, tick.n, "firings: the two due slots as one (catch-up once)")
	assert.Equal(t, int64(1), obs.missed.Load(), "slots reported missed")
	log := logs.String()
	assert.Contains(t, log, "schedule slots missed", "log")
	assert.Contains(t, log, "handler=beat", "log")
	assert.Contains(t, log, "missed=1", "log")

	// From then on the tick wakes at each slot: nothing more is missed.
	for range 5 {
		clock.Advance(receive(t, armed, "the schedule tick to sleep"))
		tick := receive(t, ticked, "the schedule tick")
		require.NoError(t, tick.err, "schedule tick")
		assert.Equal(t, 1, tick.n, "firings at %s", clock.Now())
	}
	require.NoError(t, run.stop(t))
	assert.Equal(t, int64(1), obs.missed.Load(), "slots reported missed")
}

// scheduleWorker is a quiet worker on c that reports each arming of its
// schedule tick to armed and each schedule tick to ticked.
func scheduleWorker(c *queuety.Client, armed chan<- time.Duration, ticked chan<- sweep, opts ...worker.Option) *worker.Worker {
	opts = append([]worker.Option{worker.PollInterval(20 * time.Millisecond), worker.WithLogger(quiet()),
		worker.OnTickArmed(func(d time.Duration) { armed <- d }),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task == "schedule-tick" {
				ticked <- sweep{task, n, err}
			}
		}})}, opts...)
	w := worker.New(c, opts...)
	w.HandleJob("other", func(context.Context, queuety.Payload) error { return nil })
	return w
}

// missedSlots is an observer that adds up the Missed counts of schedule
// ticks.
type missedSlots struct {
	observe.Nop
	missed atomic.Int64
}

func (m *missedSlots) Swept(_ context.Context, s observe.Sweep) {
	if s.Name == "schedule-tick" {
		m.missed.Add(int64(s.Missed))
	}
}

// TestScheduledJobsWakeIdleWorker: with a poll interval of an hour, a job
// that a schedule tick or RunScheduleNow dispatched through the worker's
// own client starts at once, as a dispatched one does.
func TestScheduledJobsWakeIdleWorker(t *testing.T) {
	for _, how := range []string{"tick", "run-now"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
			idle := make(chan struct{}, 1)
			c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock),
				queuety.WithLogger(quiet()), queuety.WithObserver(emptyClaims(idle)))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			id, err := c.Schedule("beat", nil).Every(time.Second).Save(ctx)
			require.NoError(t, err)
			ran := make(chan struct{}, 4)
			w := worker.New(c, worker.PollInterval(time.Hour), worker.NoMaintenance(), worker.WithLogger(quiet()))
			w.HandleJob("beat", func(context.Context, queuety.Payload) error { ran <- struct{}{}; return nil })
			run := runWorker(t, w)
			receive(t, idle, "an empty claim")

			if how == "tick" {
				clock.Advance(time.Second)
				fired, err := deadline.New(c).Schedules(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, fired, "runs fired")
			} else {
				ref, err := c.RunScheduleNow(ctx, id)
				require.NoError(t, err)
				require.NotZero(t, ref, "run dispatched")
			}
			receive(t, ran, "the scheduled job") // far below the hour-long poll
			require.NoError(t, run.stop(t))
		})
	}
}
