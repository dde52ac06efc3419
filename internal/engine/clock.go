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

// floorSecond truncates t to the whole second (Queuety's DATETIME columns
// have second precision).
func floorSecond(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// ceilSecond rounds t up to the next whole second, so a "not before" time
// stored at second precision is never earlier than asked.
func ceilSecond(t time.Time) time.Time {
	f := floorSecond(t)
	if f.Equal(t) {
		return f
	}
	return f.Add(time.Second)
}
