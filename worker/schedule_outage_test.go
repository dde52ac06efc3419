package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// TestScheduleTickAfterADatabaseOutage runs a worker on a fake clock
// through a proxy to the database, with a 1-second schedule under each
// catch-up policy. The database goes away while five slots pass (09:00:03
// to :07) and comes back without the clock moving: the tick retries on
// real time within seconds (it used to sleep its full idle period on the
// engine clock, then 30 s) and applies the policy as documented. once
// fires one run for the five slots and reports four missed; all fires
// the five; none fires none and reports five missed. Then the timetable
// continues with the next slot.
func TestScheduleTickAfterADatabaseOutage(t *testing.T) {
	for _, tc := range []struct {
		policy        queuetytype.CatchUpPolicy
		fired, missed int
	}{
		{queuetytype.CatchUpOnce, 1, 4},
		{queuetytype.CatchUpAll, 5, 0},
		{queuetytype.CatchUpNone, 0, 5},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			ctx := context.Background()
			dsn, _ := migrated.DSN(t)
			p := startProxy(t, "127.0.0.1:3306")
			proxied := strings.Replace(dsn, "tcp(127.0.0.1:3306)", "tcp("+p.addr+")", 1)
			if proxied == dsn {
				t.Skip("the test server is not at 127.0.0.1:3306")
			}
			start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
			clock := queuety.NewFakeClock(start)
			direct, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
			require.NoError(t, err)
			defer direct.Close()
			_, err = direct.Schedule("beat", nil).Every(time.Second).CatchUp(tc.policy).Save(ctx) // first slot 09:00:01
			require.NoError(t, err)

			obs := &missedSlots{}
			logs := &syncbuf.Buffer{}
			c, err := queuety.Open(ctx, proxied+"&timeout=2s&readTimeout=5s&writeTimeout=5s", queuety.WithClock(clock),
				queuety.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), queuety.WithObserver(obs))
			require.NoError(t, err)
			defer c.Close()
			armed := make(chan time.Duration, 100)
			ticked := make(chan sweep, 100)
			w := scheduleWorker(c, armed, ticked)
			run := runWorker(t, w)

			require.NoError(t, receive(t, ticked, "the schedule tick at start").err, "schedule tick at start")
			// Slots :01 and :02 fire on time.
			fired := 0
			var wait time.Duration
			for fired < 2 {
				wait = receive(t, armed, "the schedule tick to sleep")
				clock.Advance(wait)
				tick := receive(t, ticked, "the schedule tick")
				require.NoError(t, tick.err, "schedule tick")
				fired += tick.n
			}
			require.Equal(t, start.Add(2*time.Second), clock.Now().Truncate(time.Second), "clock after two slots")
			receive(t, armed, "the schedule tick to sleep until :03")

			// The database goes away; slots :03 to :07 pass.
			p.cut()
			clock.Advance(start.Add(7 * time.Second).Sub(clock.Now()))
			failed := receive(t, ticked, "the schedule tick during the outage")
			require.Error(t, failed.err, "schedule tick while the database is away")
			receive(t, armed, "the schedule tick to wait after the error")

			// The database comes back; the clock stands still at 09:00:07.
			p.restore(t)
			var after sweep
			deadline := time.After(20 * time.Second)
			for after.task == "" {
				select {
				case s := <-ticked:
					if s.err == nil {
						after = s
					}
				case <-armed:
				case <-deadline:
					require.FailNow(t, "no schedule tick succeeded within 20 s of the database coming back (the clock stood still)")
				}
			}
			assert.Equal(t, tc.fired, after.n, "firings for the five slots missed")
			assert.Equal(t, int64(tc.missed), obs.missed.Load(), "slots reported missed")
			if tc.missed > 0 {
				assert.Equal(t, 1, strings.Count(logs.String(), "schedule slots missed"), "warnings about missed slots")
				assert.Contains(t, logs.String(), "catch_up="+string(tc.policy), "warning")
			} else {
				assert.Zero(t, strings.Count(logs.String(), "schedule slots missed"), "warnings about missed slots")
			}
			jobs, err := direct.ListJobs(ctx, driver.JobFilter{Handler: "beat", Limit: 100})
			require.NoError(t, err)
			assert.Len(t, jobs, 2+tc.fired, "jobs dispatched")
			s, err := direct.Schedules(ctx)
			require.NoError(t, err)
			require.Len(t, s, 1, "schedules")
			assert.Equal(t, start.Add(8*time.Second), s[0].NextRun, "next run after the outage")

			// The timetable continues: :08 fires on its own.
			for {
				wait := drainLast(t, armed)
				clock.Advance(wait)
				tick := receive(t, ticked, "the schedule tick")
				require.NoError(t, tick.err, "schedule tick")
				if tick.n > 0 {
					assert.Equal(t, 1, tick.n, "firings at %s", clock.Now())
					break
				}
				require.Less(t, clock.Now(), start.Add(9*time.Second), "slot :08 did not fire")
			}
			require.NoError(t, run.stop(t))
		})
	}
}

// drainLast waits for a value on ch and returns the last one sent so far.
func drainLast[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	v := receive(t, ch, "the schedule tick to sleep")
	for {
		select {
		case v = <-ch:
		default:
			return v
		}
	}
}
