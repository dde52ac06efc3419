// Package rowtime holds the time rules of the stored rows: Queuety's
// DATETIME columns have second precision, so a written time is truncated
// (Floor) or, for a "not before" time, rounded up (Ceil); a job's due time
// is Due; and the ISO 8601 form events and exports carry is ISO.
//
// The rules touch no row and read no clock: the engine and the operator
// actions pass them the time their clock gave.
package rowtime

import "time"

// Floor truncates t to the whole second, in UTC.
func Floor(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// Ceil rounds t up to the next whole second, in UTC, so a "not before"
// time stored at second precision is never earlier than asked.
func Ceil(t time.Time) time.Time {
	f := Floor(t)
	if f.Equal(t) {
		return f
	}
	return f.Add(time.Second)
}

// Due is the stored available_at of a job dispatched at now with delay d:
// now, truncated, for an immediate job (so it is due at once), rounded up
// for a delayed one (never early).
func Due(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return Floor(now)
	}
	return Ceil(now.Add(d))
}

// ISO formats t as ISO 8601 in UTC with microseconds, or "" for the zero
// time.
func ISO(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
