// Package schedexpr parses and evaluates Queuety schedule expressions.
//
// A Queuety schedule row stores an expression and its type in the schedules
// table's expression and expression_type columns:
//
//   - "interval": a PHP relative time such as "15 minutes", "1 hour" or
//     "3600 seconds", which Queuety applies with
//     DateTimeImmutable::modify('+' . expression). See ParseInterval.
//   - "cron": a 5-field cron expression (minute hour day-of-month month
//     day-of-week) such as "0 3 * * *". See ParseCron.
//
// This package only computes firing times. The engine (package queuety)
// decides what a tick does with them: it anchors each next_run on the slot
// before it, so intervals do not drift, and applies the schedule's catch-up
// policy to slots missed during downtime.
// All times are UTC: stored next_run values are UTC wall-clock times, and
// Next always returns a UTC time whatever the location of its argument. A
// cron expression may name the zone its fields are read in with a CRON_TZ=
// (or TZ=) prefix; Queuety PHP does not accept such expressions.
//
// # Differences from Queuety PHP cron expressions
//
// Cron expressions are evaluated by github.com/robfig/cron/v3 with its
// standard parser. For the expressions Queuety PHP accepts, the one
// deliberate difference is how a restricted day of month combines with a
// restricted day of week. When neither field is "*" (or "?"), robfig/cron,
// like Vixie cron and cronie, fires on days that match EITHER field, while
// Queuety PHP fires only on days that match BOTH. So "0 0 13 * 5" is
// "midnight on the 13th and on every Friday" here, but "midnight on Friday
// the 13th" in PHP. When only one of the two fields is restricted, both
// behave the same. Schedules that both runtimes tick should restrict at most
// one of the two fields.
//
// Smaller differences. Only the first changes when an expression that PHP
// stores fires; the others are syntax PHP does not have, or values PHP
// silently ignores:
//
//   - Day of week 7 means Sunday everywhere here, also as the end of a range
//     ("5-7" is Friday to Sunday); PHP honours 7 only as a single value and
//     silently drops it from ranges ("5-7" is Friday and Saturday there).
//   - Accepted in addition: month and weekday names ("jan", "mon"), "?" as
//     "*", "N/step" as "N-max/step" (PHP never matches it), and the
//     descriptors "@yearly", "@annually", "@monthly", "@weekly", "@daily",
//     "@midnight", "@hourly" and "@every <Go duration>".
//   - Out-of-range values (minute 60, day of week 8) are parse errors;
//     PHP accepts them and they never match. An expression that can never
//     fire, such as "0 0 30 2 *", is rejected by both runtimes (PHP when the
//     schedule is added).
//   - Next searches up to five years ahead (PHP gives up after one) and
//     returns the zero time when nothing matches.
//   - "TZ=" and "CRON_TZ=" prefixes are rejected: stored schedules are UTC.
package schedexpr

import (
	"fmt"
	"time"
)

// Type is the expression_type column of Queuety's schedules table.
type Type string

// The expression types Queuety stores.
const (
	// Interval expressions are PHP relative times such as "5 minutes".
	Interval Type = "interval"
	// Cron expressions are 5-field cron expressions such as "0 3 * * *".
	Cron Type = "cron"
)

// Schedule computes firing times. All times are UTC.
type Schedule interface {
	// Next returns the first firing time strictly after after, in UTC. It
	// returns the zero time if the schedule never fires again within the
	// search window (five years for cron expressions).
	Next(after time.Time) time.Time
}

// Parse parses expr as an expression of the given type, as stored in the
// expression and expression_type columns of Queuety's schedules table.
func Parse(typ Type, expr string) (Schedule, error) {
	switch typ {
	case Interval:
		d, err := ParseInterval(expr)
		if err != nil {
			return nil, err
		}
		return intervalSchedule(d), nil
	case Cron:
		return ParseCron(expr)
	default:
		return nil, fmt.Errorf("schedexpr: unknown expression type %q (want %q or %q)", string(typ), string(Interval), string(Cron))
	}
}

// intervalSchedule fires a fixed duration after the time it is asked about.
type intervalSchedule time.Duration

// Next returns after + the interval, in UTC. Sub-second precision is kept;
// Queuety stores next_run with whole seconds.
func (s intervalSchedule) Next(after time.Time) time.Time {
	return after.UTC().Add(time.Duration(s))
}
