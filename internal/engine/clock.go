package engine

import "time"

// Clock tells the engine what time it is. Every timestamp the engine writes
// and every due-time comparison it makes uses this clock, so a test can move
// time forward instead of waiting. Production code uses SystemClock; worker
// hosts should keep their clocks in sync (NTP), as with any multi-host queue.
type Clock interface {
	Now() time.Time
}

// systemClock is the wall clock in UTC.
type systemClock struct{}

// Now returns time.Now in UTC.
func (systemClock) Now() time.Time { return time.Now().UTC() }
