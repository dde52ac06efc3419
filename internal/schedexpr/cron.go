package schedexpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronSchedule evaluates a robfig/cron schedule in its location (UTC
// unless the expression names a zone).
type cronSchedule struct {
	s cron.Schedule
}

// Next returns the first firing time strictly after after, in UTC, or the
// zero time if there is none within five years.
func (c cronSchedule) Next(after time.Time) time.Time {
	// robfig/cron evaluates a schedule without its own time zone in the
	// location of the time it is given, so converting to UTC first makes the
	// result independent of the machine's local zone.
	return c.s.Next(after.UTC())
}

// neverFiresProbe is the time ParseCron evaluates a new schedule from to
// reject expressions that can never fire.
var neverFiresProbe = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// ParseCron parses a cron expression: the standard five fields (minute, hour,
// day of month, month, day of week) or one of the descriptors @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly and
// @every <Go duration>. The schedule is evaluated in UTC, or in the IANA
// time zone of a CRON_TZ= (or TZ=) prefix ("CRON_TZ=Europe/Berlin 0 9 * * *"
// fires at 09:00 Berlin time, across daylight-saving changes). Next always
// returns UTC times. See the package documentation for how this differs
// from Queuety PHP.
func ParseCron(expr string) (Schedule, error) {
	spec := strings.TrimSpace(expr)
	invalid := func(reason error) error {
		return fmt.Errorf("schedexpr: invalid cron expression %q: %w", expr, reason)
	}

	loc := time.UTC
	if rest, ok := cutZonePrefix(spec); ok {
		name, fields, _ := strings.Cut(rest, " ")
		l, err := time.LoadLocation(name)
		if err != nil || name == "" {
			return nil, invalid(fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin)", name))
		}
		loc, spec = l, strings.TrimSpace(fields)
		if strings.HasPrefix(spec, "@every") {
			return nil, invalid(errors.New("@every does not take a time zone"))
		}
	}
	if rest, ok := strings.CutPrefix(spec, "@every"); ok {
		// robfig/cron silently turns zero, negative and sub-second durations
		// into one second; reject them instead.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err == nil && d < MinInterval {
			return nil, invalid(fmt.Errorf("@every duration must be at least %s", MinInterval))
		}
	}
	if !strings.HasPrefix(spec, "@") {
		if fields := strings.Fields(spec); len(fields) == 5 {
			fields[4] = normalizeDayOfWeek(fields[4])
			spec = strings.Join(fields, " ")
		}
	}

	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, invalid(err)
	}
	if ss, ok := s.(*cron.SpecSchedule); ok {
		ss.Location = loc
	}
	sched := cronSchedule{s: s}
	if sched.Next(neverFiresProbe).IsZero() {
		return nil, invalid(errors.New("it never fires"))
	}
	return sched, nil
}

// cutZonePrefix strips a CRON_TZ= or TZ= prefix and returns the rest.
func cutZonePrefix(spec string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(spec, p); ok {
			return rest, true
		}
	}
	return spec, false
}

// normalizeDayOfWeek rewrites 7 (Sunday, as in Vixie cron) in a day-of-week
// field into the 0-6 range robfig/cron accepts: "7" becomes "0", "5-7"
// becomes "5-6,0" and "1-7/2" becomes "1-6/2,0". Anything it does not
// recognise is left for robfig/cron to accept or reject.
func normalizeDayOfWeek(field string) string {
	items := strings.Split(field, ",")
	out := make([]string, 0, len(items)+1)
	for _, item := range items {
		rng, step, hasStep := strings.Cut(item, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		switch {
		case !isRange && lo == "7":
			// "7", or "7/n", which is "7-7/n" in robfig's reading.
			out = append(out, "0")
		case isRange && hi == "7":
			start, ok := dayOfWeekNumber(lo)
			if !ok {
				out = append(out, item)
				continue
			}
			n := 1
			if hasStep {
				var err error
				if n, err = strconv.Atoi(step); err != nil || n <= 0 {
					out = append(out, item)
					continue
				}
			}
			if start == 7 {
				out = append(out, "0")
				continue
			}
			head := lo + "-6"
			if hasStep {
				head += "/" + step
			}
			out = append(out, head)
			if (7-start)%n == 0 {
				out = append(out, "0")
			}
		default:
			out = append(out, item)
		}
	}
	return strings.Join(out, ",")
}

// dayOfWeekNumber returns the number of a day-of-week value: 0-7 or a
// three-letter English name.
func dayOfWeekNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= 7
	}
	i := strings.Index("sunmontuewedthufrisat", strings.ToLower(s))
	if len(s) != 3 || i < 0 || i%3 != 0 {
		return 0, false
	}
	return i / 3, true
}
