package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
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
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

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
	cancel()
	require.NoError(t, <-done)

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
