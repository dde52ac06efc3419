package schedexpr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MinInterval is the shortest interval ParseInterval accepts. Queuety stores
// next_run with one-second precision, and schedulers tick far less often.
const MinInterval = time.Second

// intervalUnits maps the PHP relative-time units with a fixed length to that
// length. PHP's month, year, weekday and day-name units are left out on
// purpose: they are calendar steps, not durations.
var intervalUnits = map[string]time.Duration{
	"sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"hour": time.Hour, "hours": time.Hour,
	"day": 24 * time.Hour, "days": 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
	"fortnight": 14 * 24 * time.Hour, "fortnights": 14 * 24 * time.Hour,
	"forthnight": 14 * 24 * time.Hour, "forthnights": 14 * 24 * time.Hour,
}

// calendarUnits are PHP units whose length depends on the date.
var calendarUnits = map[string]bool{
	"month": true, "months": true, "year": true, "years": true,
	"weekday": true, "weekdays": true,
}

// ParseInterval parses an interval expression into a duration.
//
// It accepts what Queuety's every() stores, a PHP relative time applied with
// DateTimeImmutable::modify('+' . expr): an integer followed by a unit, such
// as "30 seconds", "5 minutes", "1 hour", "2 days", "1 week" or
// "3600 seconds". Units are case-insensitive, singular or plural, and may be
// abbreviated to sec/secs/min/mins; "fortnight" (14 days) is accepted as PHP
// does. An optional leading '+', surrounding whitespace, no space between
// number and unit ("5min"), and several parts ("1 hour 30 minutes") are
// accepted too. As a convenience, Go duration syntax ("90s", "1h30m") is
// accepted as well.
//
// Months and years are rejected because they have no fixed length; use a
// cron expression instead. The interval must be at least MinInterval.
func ParseInterval(expr string) (time.Duration, error) {
	d, err := parseRelative(expr)
	if err != nil {
		goDur, goErr := time.ParseDuration(strings.TrimSpace(expr))
		if goErr != nil {
			return 0, fmt.Errorf("schedexpr: invalid interval %q: %w", expr, err)
		}
		d = goDur
	}
	if d < MinInterval {
		return 0, fmt.Errorf("schedexpr: invalid interval %q: must be at least %s", expr, MinInterval)
	}
	return d, nil
}

// parseRelative parses one or more "[+]N unit" parts of a PHP relative time
// and returns their sum.
func parseRelative(expr string) (time.Duration, error) {
	s := strings.TrimSpace(expr)
	if s == "" {
		return 0, fmt.Errorf("empty expression")
	}
	var total time.Duration
	for s != "" {
		if s[0] == '-' {
			return 0, fmt.Errorf("negative intervals are not allowed")
		}
		s = strings.TrimLeft(strings.TrimPrefix(s, "+"), " \t")

		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 {
			return 0, fmt.Errorf("expected a number at %q", s)
		}
		count, err := strconv.ParseInt(s[:n], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("number %q is too large", s[:n])
		}
		s = strings.TrimLeft(s[n:], " \t")

		u := 0
		for u < len(s) && isLetter(s[u]) {
			u++
		}
		if u == 0 {
			if s == "" {
				return 0, fmt.Errorf("missing unit after %d", count)
			}
			return 0, fmt.Errorf("unexpected %q", s)
		}
		unitText := s[:u]
		unit, ok := intervalUnits[strings.ToLower(unitText)]
		if !ok {
			if calendarUnits[strings.ToLower(unitText)] {
				return 0, fmt.Errorf("unit %q has no fixed length; use a cron expression", unitText)
			}
			return 0, fmt.Errorf("unknown unit %q", unitText)
		}
		if count > int64(math.MaxInt64/unit) || total > math.MaxInt64-time.Duration(count)*unit {
			return 0, fmt.Errorf("interval is too long")
		}
		total += time.Duration(count) * unit
		s = strings.TrimLeft(s[u:], " \t")
	}
	return total, nil
}

func isLetter(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
