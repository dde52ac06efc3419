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
// # Cron expressions fire as Queuety PHP fires them
//
// A schedule row may be ticked by a Go worker or by Queuety PHP, whichever
// claims it first, so a stored cron expression means here exactly what it
// means to Queuety PHP 0.22 (Parse), rule for rule:
//
//   - A time matches when all five fields match: when both the day of month
//     and the day of week are restricted, a day must match BOTH ("0 0 13 * 5"
//     is midnight on Friday the 13th), not either as in Vixie cron.
//   - Lists, "*", "a-b", "*/n" (from the field's minimum) and "a-b/n" (from
//     a) match as usual; "a/n" never matches; a lone 7 in the day of week is
//     Sunday, but a range stops at 6 ("5-7" is Friday and Saturday).
//   - Numbers are read as PHP's (int) cast reads them: names, "?" and other
//     text are 0 ("mon" is Sunday, "jan" never matches), and out-of-range
//     values are accepted and never match.
//   - The next firing is the first matching minute after the last one.
//     Queuety PHP gives up searching after one year (its tick then fails);
//     Go searches five years, so a Go worker keeps firing "0 0 29 2 *" and
//     the Fridays the 13th more than a year apart on their matching days.
//
// Expressions users write (ParseCron, CanonicalCron) may use the usual
// extras: names, "?", 7 in ranges, "a/n", the descriptors (@daily, ...) and
// a CRON_TZ= zone prefix, read by robfig/cron's standard parser. CanonicalCron
// rewrites such a field into the
// values it stands for, so the stored row reads the same to both runtimes;
// only a zone prefix stays Go-only (Queuety PHP cannot tick such a row).
// The day-of-month and day-of-week rule is Queuety PHP's for every schedule:
// a rule per schedule would need a column Queuety PHP does not read, and
// Queuety PHP ticks its rows with its own rule whatever the row says.
package schedexpr

import (
	"fmt"
	"strings"
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
		spec := strings.TrimSpace(expr)
		if _, _, zoned := cutZone(spec); zoned || strings.HasPrefix(spec, "@") {
			// Syntax only Go writes; Queuety PHP cannot tick these rows.
			return ParseCron(spec)
		}
		c, err := parsePHPCron(expr, time.UTC)
		if err != nil {
			return nil, fmt.Errorf("schedexpr: invalid cron expression %q: %w", expr, err)
		}
		return c, nil
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
