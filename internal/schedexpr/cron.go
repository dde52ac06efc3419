package schedexpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// neverFiresProbe is the time a new expression is evaluated from to reject
// expressions that can never fire.
var neverFiresProbe = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// descriptors are the cron descriptors, as the five fields they stand for.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

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
	if strings.HasPrefix(spec, "@") {
		f, ok := descriptors[strings.ToLower(spec)]
		if !ok {
			return "", nil, fmt.Errorf("unknown descriptor %s (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>)", spec)
		}
		spec = f
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return "", nil, fmt.Errorf("expected exactly 5 fields (minute hour day-of-month month day-of-week), found %d", len(fields))
	}
	for i, f := range cronFields {
		set, err := parseUserField(fields[i], i)
		if err != nil {
			return "", nil, fmt.Errorf("%s field %q: %w", f.name, fields[i], err)
		}
		if strings.Trim(fields[i], "0123456789,-*/") != "" || !phpReadsAs(fields[i], f, set) {
			fields[i] = formatSet(set, f)
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

// userNames are the names a user may write in the month and day-of-week
// fields, three letters each, starting at value 1 and 0.
var userNames = map[int]string{3: "janfebmaraprmayjunjulaugsepoctnovdec", 4: "sunmontuewedthufrisat"}

// parseUserField reads field i as a user writes it (see ParseCron) and
// returns the set of values it stands for; 7 in the day of week is 0.
func parseUserField(text string, i int) (uint64, error) {
	f := cronFields[i]
	hi := f.last
	if i == 4 {
		hi = 7
	}
	var set uint64
	for _, item := range strings.Split(text, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		var from, to int
		if rng == "*" || rng == "?" {
			from, to = f.min, hi
		} else {
			loText, hiText, isRange := strings.Cut(rng, "-")
			var err error
			if from, err = userValue(loText, i); err != nil {
				return 0, err
			}
			to = from
			switch {
			case isRange:
				if to, err = userValue(hiText, i); err != nil {
					return 0, err
				}
			case hasStep:
				to = hi
			}
			if from < f.min || to > hi {
				return 0, fmt.Errorf("value out of range %d-%d", f.min, hi)
			}
			if from > to {
				return 0, fmt.Errorf("range %d-%d runs backwards", from, to)
			}
		}
		for v := from; v <= to; v += step {
			bit := v
			if i == 4 && v == 7 { // Sunday
				bit = 0
			}
			set |= 1 << bit
		}
	}
	return set, nil
}

// userValue reads one number or name of field i.
func userValue(s string, i int) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && s != "" && s[0] != '+' && s[0] != '-' {
		return n, nil
	}
	if names, ok := userNames[i]; ok && len(s) == 3 {
		if at := strings.Index(names, strings.ToLower(s)); at >= 0 && at%3 == 0 {
			if i == 3 {
				return at/3 + 1, nil
			}
			return at / 3, nil
		}
	}
	return 0, fmt.Errorf("%q is not a number or a name", s)
}
