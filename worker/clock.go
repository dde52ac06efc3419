package worker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/queuety/queuety-go/internal/engine"
)

// TimerClock is a client clock (queuety.WithClock) that drives timers as
// well as telling the time. queuety.FakeClock implements it.
//
// When the client's clock implements TimerClock (or is itself a
// clockwork.Clock), a worker runs on that clock: the periodic sweeps and
// the schedule tick, the wait between claims of an idle worker and the
// renewal of running jobs' claims. Moving the clock forward then runs what
// falls due at once, which lets tests skip minutes of maintenance
// intervals. With any other clock (queuety.SystemClock by default) these
// run on real time.
//
// Waits that measure the outside world stay on real time whatever the
// clock: retries while the database is unreachable, the shutdown grace
// period, the abandon grace (AbandonGrace), the short waits that fill a
// claim batch, and the deadlines on a
// handler's context (the time left on the engine clock when the attempt
// starts, counted down in real time; the activity-timeout sweep enforces
// them on the engine clock). The wait between
// claims and the claim renewals end when their interval has passed on
// either clock, so an idle worker still notices new jobs while a fake clock
// stands still.
type TimerClock interface {
	Now() time.Time
	// Timers returns the clock that timers and tickers are made from; its
	// Now must agree with the TimerClock's.
	Timers() clockwork.Clock
}

// timersOf returns the clock the worker's timers run on for an engine clock
// c, and whether it is c's (rather than real time).
func timersOf(c engine.Clock) (clockwork.Clock, bool) {
	switch c := c.(type) {
	case TimerClock:
		if t := c.Timers(); t != nil {
			return t, true
		}
	case clockwork.Clock:
		return c, true
	}
	return clockwork.NewRealClock(), false
}

// either is a timer that fires when d has passed in real time or on the
// engine clock, whichever comes first.
type either struct {
	real *time.Timer
	eng  clockwork.Timer
}

// newEither starts an either timer; eng is nil when the engine clock does
// not drive timers.
func (w *Worker) newEither(d time.Duration) *either {
	e := &either{real: time.NewTimer(d)}
	if w.engineTimers {
		e.eng = w.timers.NewTimer(d)
	}
	return e
}

// engC is the engine-clock timer's channel (nil, never ready, without one).
func (e *either) engC() <-chan time.Time {
	if e.eng == nil {
		return nil
	}
	return e.eng.Chan()
}

func (e *either) stop() {
	e.real.Stop()
	if e.eng != nil {
		e.eng.Stop()
	}
}

// jitter spreads d by ±frac × d at random.
func jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 || frac <= 0 {
		return d
	}
	spread := float64(d) * frac
	return d + time.Duration((rand.Float64()*2-1)*spread)
}

// sleep waits for d of real time or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
