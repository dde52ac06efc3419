package queuety

import (
	"sync"
	"time"
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
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t.UTC()} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}
