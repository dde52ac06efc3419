package schedexpr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A cronField is one of the five fields of a cron expression: its name, the
// values Queuety PHP compares it with, and the bounds PHP passes to its
// field matcher (day of week is checked against 0-6 but matched with a
// maximum of 7, which is what makes a lone 7 mean Sunday).
type cronField struct {
	name     string
	min, max int // the matcher's bounds
	last     int // the largest value a time has in this field
}

// The five fields, in order.
var cronFields = [5]cronField{
	{"minute", 0, 59, 59},
	{"hour", 0, 23, 23},
	{"day of month", 1, 31, 31},
	{"month", 1, 12, 12},
	{"day of week", 0, 7, 6},
}

// errModuloByZero is what Queuety PHP throws (DivisionByZeroError) when a
// step of 0 is evaluated.
var errModuloByZero = errors.New("step of 0 (Queuety PHP fails with \"Modulo by zero\")")

// phpCron is a cron expression as Queuety PHP 0.22 evaluates it: each field
// is a set of the values it matches, and a time matches when all five do
// (day of month AND day of week).
type phpCron struct {
	sets [5]uint64 // bit v set: the field matches value v
	loc  *time.Location
}

// parsePHPCron reads expr exactly as Queuety PHP's CronExpression does: the
// expression is trimmed and split on runs of white space into exactly five
// fields, and each field is matched value by value with PHP's rules (see
// phpMatch). The fields are read in loc.
func parsePHPCron(expr string, loc *time.Location) (*phpCron, error) {
	fields := phpSplitFields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields (minute hour day-of-month month day-of-week), found %d", len(fields))
	}
	c := &phpCron{loc: loc}
	for i, f := range cronFields {
		for v := f.min; v <= f.last; v++ {
			ok, err := phpMatch(fields[i], v, f.min, f.max)
			if err != nil {
				return nil, fmt.Errorf("%s field %q: %w", f.name, fields[i], err)
			}
			if ok {
				c.sets[i] |= 1 << v
			}
		}
	}
	return c, nil
}

// phpSplitFields trims expr as PHP's trim() does and splits it on runs of
// the white space PCRE's \s matches, keeping empty leading or trailing
// fields as preg_split does.
func phpSplitFields(expr string) []string {
	expr = strings.Trim(expr, " \t\n\r\x00\x0b")
	isSpace := func(r byte) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' }
	var fields []string
	start := 0
	for i := 0; i < len(expr); {
		if !isSpace(expr[i]) {
			i++
			continue
		}
		fields = append(fields, expr[start:i])
		for i < len(expr) && isSpace(expr[i]) {
			i++
		}
		start = i
	}
	return append(fields, expr[start:])
}

// phpMatch reports whether value v matches one cron field under Queuety
// PHP's rules, tried in this order:
//
//   - a list "a,b,c" matches when one of its trimmed parts does;
//   - "range/step": "*/n" matches v with (v-min)%n == 0; "a-b/n" matches
//     a <= v <= b with (v-a)%n == 0; any other range ("5/10") never
//     matches; a step of 0 fails as PHP's modulo does when it is reached;
//   - "a-b" matches a <= v <= b;
//   - "*" matches everything;
//   - anything else matches v == the value, where 7 is 0 in the day of week.
//
// Numbers are read as PHP's (int) cast reads strings (phpInt): names,
// "?" and other text are 0, so "mon" means Sunday and "jan" never matches.
func phpMatch(field string, v, min, max int) (bool, error) {
	if strings.Contains(field, ",") {
		for _, part := range strings.Split(field, ",") {
			ok, err := phpMatch(strings.Trim(part, " \t\n\r\x00\x0b"), v, min, max)
			if ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	if rng, stepText, ok := strings.Cut(field, "/"); ok {
		step := phpInt(stepText)
		if rng == "*" {
			if step == 0 {
				return false, errModuloByZero
			}
			return (v-min)%step == 0, nil
		}
		if lo, hi, ok := strings.Cut(rng, "-"); ok {
			a, b := phpInt(lo), phpInt(hi)
			if v < a || v > b {
				return false, nil
			}
			if step == 0 {
				return false, errModuloByZero
			}
			return (v-a)%step == 0, nil
		}
		return false, nil
	}
	if lo, hi, ok := strings.Cut(field, "-"); ok {
		return v >= phpInt(lo) && v <= phpInt(hi), nil
	}
	if field == "*" {
		return true, nil
	}
	n := phpInt(field)
	if max == 7 && n == 7 {
		n = 0
	}
	return v == n, nil
}

// phpInt converts s as PHP 8's (int) cast converts a string: leading white
// space is skipped, the longest numeric prefix (sign, digits, a fraction,
// an exponent) is read and truncated toward zero, saturating at the int
// range; a string with no numeric prefix is 0.
func phpInt(s string) int {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	intDigits := digits()
	isFloat := false
	if i < len(s) && s[i] == '.' {
		j := i
		i++
		if intDigits+digits() == 0 {
			i = j
		} else {
			isFloat = true
		}
	}
	if intDigits == 0 && !isFloat {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			i = j
		} else {
			isFloat = true
		}
	}
	num := s[:i]
	if !isFloat {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			return int(n)
		}
	}
	f, _ := strconv.ParseFloat(num, 64)
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int(f)
}

// matches reports whether field i matches value v.
func (c *phpCron) matches(i, v int) bool { return c.sets[i]&(1<<v) != 0 }

// Next returns the first whole minute strictly after after whose fields
// all match, or the zero time if there is none within five years. The
// result is UTC. Queuety PHP searches the same way but gives up after one
// year (and fails its tick), so the times agree wherever PHP finds one;
// beyond it ("0 0 13 * 5" after a Friday the 13th 14 months before the
// next) Go still fires on the next matching minute.
func (c *phpCron) Next(after time.Time) time.Time {
	loc := c.loc
	t := after.In(loc).Truncate(time.Minute).Add(time.Minute)
	limit := after.In(loc).AddDate(5, 0, 0)
	for !t.After(limit) {
		y, mo, d := t.Date()
		h, mi := t.Hour(), t.Minute()
		var next time.Time
		switch {
		case !c.matches(3, int(mo)):
			next = time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
		case !c.matches(2, d) || !c.matches(4, int(t.Weekday())):
			next = time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		case !c.matches(1, h):
			next = time.Date(y, mo, d, h+1, 0, 0, 0, loc)
		case !c.matches(0, mi):
			next = t.Add(time.Minute)
		default:
			return t.UTC()
		}
		if !next.After(t) { // a daylight-saving change in loc
			next = t.Add(time.Minute)
		}
		t = next
	}
	return time.Time{}
}
