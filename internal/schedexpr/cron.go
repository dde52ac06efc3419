package schedexpr

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// neverFiresProbe is the time a new expression is evaluated from to reject
// expressions that can never fire.
var neverFiresProbe = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// ParseCron parses a cron expression written by a user: the five fields
// (minute, hour, day of month, month, day of week) with numbers, "*", "?",
// ranges, steps ("*/5", "10-40/10", "5/15"), lists, month and weekday names
// ("jan", "mon") and 7 as Sunday, or a descriptor (@yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly, or @every <Go duration>).
// A CRON_TZ= (or TZ=) prefix names the IANA zone the fields are read in.
//
// The schedule fires when CanonicalCron's form of expr fires under Queuety
// PHP's rules: in particular on days that match both the day of month and
// the day of week. Next always returns UTC times.
func ParseCron(expr string) (Schedule, error) {
	invalid := func(reason error) error {
		return fmt.Errorf("schedexpr: invalid cron expression %q: %w", expr, reason)
	}
	spec := strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(spec, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || strings.TrimSpace(rest) == "" {
			return nil, invalid(errors.New("@every needs a Go duration such as 90s or 1h"))
		}
		if d < MinInterval {
			return nil, invalid(fmt.Errorf("@every duration must be at least %s", MinInterval))
		}
		return intervalSchedule(d), nil
	}
	canon, loc, err := canonicalCron(spec)
	if err != nil {
		return nil, invalid(err)
	}
	c, err := parsePHPCron(canon, loc)
	if err != nil {
		return nil, invalid(err)
	}
	if c.Next(neverFiresProbe).IsZero() {
		return nil, invalid(errors.New("it never fires"))
	}
	return c, nil
}

// CanonicalCron returns the form of a user's cron expression (see
// ParseCron; @every is not a cron expression and is rejected) to store in
// a schedule row: five fields that Queuety PHP reads with the meaning the
// user wrote. A descriptor becomes its five fields; a field PHP would read
// differently (7 inside a range, "5/15") or that uses names or "?" is
// rewritten as the list of the values it stands for ("mon-fri" is "1-5", "5-7" in the day of
// week is "0,5-6"); every other field is kept as written. A zone prefix is
// kept (Queuety PHP cannot read such an expression).
func CanonicalCron(expr string) (string, error) {
	spec := strings.TrimSpace(expr)
	if strings.HasPrefix(spec, "@every") {
		return "", fmt.Errorf("schedexpr: invalid cron expression %q: @every is an interval, not a cron expression", expr)
	}
	if _, err := ParseCron(spec); err != nil {
		return "", err
	}
	canon, _, _ := canonicalCron(spec)
	if zone, _, ok := cutZone(spec); ok {
		return zone + " " + canon, nil
	}
	return canon, nil
}

// canonicalCron splits off a zone prefix, expands a descriptor and
// rewrites each field in the form Queuety PHP reads (see CanonicalCron).
func canonicalCron(spec string) (string, *time.Location, error) {
	loc := time.UTC
	if zone, rest, ok := cutZone(spec); ok {
		name := strings.TrimPrefix(strings.TrimPrefix(zone, "CRON_TZ="), "TZ=")
		l, err := time.LoadLocation(name)
		if err != nil || name == "" {
			return "", nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin)", name)
		}
		if strings.HasPrefix(rest, "@every") {
			return "", nil, errors.New("@every does not take a time zone")
		}
		loc, spec = l, rest
	}
	if spec == "" {
		return "", nil, errors.New("empty expression")
	}
	sets, err := userFieldSets(spec)
	if err != nil {
		return "", nil, err
	}
	fields := strings.Fields(spec)
	if strings.HasPrefix(spec, "@") {
		fields = make([]string, len(cronFields))
	}
	for i, f := range cronFields {
		if fields[i] == "" || strings.Trim(fields[i], "0123456789,-*/") != "" || !phpReadsAs(fields[i], f, sets[i]) {
			fields[i] = formatSet(sets[i], f)
		}
	}
	return strings.Join(fields, " "), loc, nil
}

// cutZone splits a CRON_TZ=zone or TZ=zone prefix off spec.
func cutZone(spec string) (zone, rest string, ok bool) {
	if !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		return "", spec, false
	}
	zone, rest, _ = strings.Cut(spec, " ")
	return zone, strings.TrimSpace(rest), true
}

// phpReadsAs reports whether Queuety PHP reads text as exactly set.
func phpReadsAs(text string, f cronField, set uint64) bool {
	var php uint64
	for v := f.min; v <= f.last; v++ {
		ok, err := phpMatch(text, v, f.min, f.max)
		if err != nil {
			return false
		}
		if ok {
			php |= 1 << v
		}
	}
	return php == set
}

// formatSet writes set as "*" or a list of values and ranges.
func formatSet(set uint64, f cronField) string {
	var all uint64
	for v := f.min; v <= f.last; v++ {
		all |= 1 << v
	}
	if set == all {
		return "*"
	}
	var parts []string
	for v := f.min; v <= f.last; v++ {
		if set&(1<<v) == 0 {
			continue
		}
		end := v
		for end+1 <= f.last && set&(1<<(end+1)) != 0 {
			end++
		}
		switch {
		case end == v:
			parts = append(parts, strconv.Itoa(v))
		case end == v+1:
			parts = append(parts, strconv.Itoa(v), strconv.Itoa(end))
		default:
			parts = append(parts, strconv.Itoa(v)+"-"+strconv.Itoa(end))
		}
		v = end
	}
	return strings.Join(parts, ",")
}

// userParser reads the five fields and the descriptors as a user writes
// them: robfig/cron's standard parser (names, "?", ranges, steps, lists,
// @yearly ... @hourly).
var userParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// userFieldSets reads spec (no zone prefix; not @every) as a user writes
// it and returns the set of values of each of the five fields; 7 in the
// day of week is Sunday.
func userFieldSets(spec string) ([5]uint64, error) {
	if fields := strings.Fields(spec); len(fields) == 5 {
		for i, f := range fields {
			if slices.Contains(strings.Split(f, ","), "") {
				return [5]uint64{}, fmt.Errorf("%s field %q has an empty list item", cronFields[i].name, f)
			}
		}
		fields[4] = normalizeDayOfWeek(fields[4])
		spec = strings.Join(fields, " ")
	} else if strings.HasPrefix(spec, "@") {
		spec = strings.ToLower(spec)
	} else {
		return [5]uint64{}, fmt.Errorf("expected exactly 5 fields (minute hour day-of-month month day-of-week), found %d", len(fields))
	}
	sched, err := userParser.Parse(spec)
	if err != nil {
		return [5]uint64{}, fieldError(spec, err)
	}
	spec5, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return [5]uint64{}, fmt.Errorf("%s is not a cron expression", spec)
	}
	// robfig/cron marks a field written as "*" or "?" with its top bit.
	const star = uint64(1) << 63
	return [5]uint64{spec5.Minute &^ star, spec5.Hour &^ star, spec5.Dom &^ star, spec5.Month &^ star, spec5.Dow &^ star}, nil
}

// fieldError names the field of spec that robfig/cron refused with err, by
// parsing each field alone.
func fieldError(spec string, err error) error {
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return err
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		if _, ferr := userParser.Parse(strings.Join(probe, " ")); ferr != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, f, ferr)
		}
	}
	return err
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
