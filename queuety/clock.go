package queuety

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock tells the engine what time it is. Every timestamp the engine writes
// and every due-time comparison it makes uses this clock, so a test can move
// time forward instead of waiting. Production code uses SystemClock; worker
// hosts should keep their clocks in sync (NTP), as with any multi-host queue.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real wall clock, in UTC.
type SystemClock struct{}

// Now returns time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// FakeClock is a Clock for tests: it only moves when told to. It is safe for
// concurrent use.
//
// A FakeClock also drives timers (see Timers): a worker whose client uses
// it runs its maintenance on it, so Advance and Set run the sweeps and the
// schedule tick that fall due instead of leaving them to real time.
type FakeClock struct {
	mu sync.Mutex // serialises Advance and Set
	fc *clockwork.FakeClock
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{fc: clockwork.NewFakeClockAt(t.UTC())}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time { return c.fc.Now().UTC() }

// Advance moves the clock forward by d and returns the new time.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fc.Advance(d)
	return c.Now()
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A Duration spans about 292 years; step through longer moves.
	for now := c.fc.Now(); !now.Equal(t); now = c.fc.Now() {
		c.fc.Advance(t.Sub(now))
	}
}

// Timers returns the clock behind c for timers and tickers: they fire when
// Advance or Set moves c past their expiry. Moving c backwards fires
// nothing. Package worker detects this method (worker.TimerClock) and runs
// its maintenance on the returned clock.
func (c *FakeClock) Timers() clockwork.Clock { return c.fc }
