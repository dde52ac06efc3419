package schedexpr

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// at parses a UTC "2006-01-02 15:04:05" time, the format of Queuety's
// next_run column.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(time.DateTime, s, time.UTC)
	require.NoError(t, err)
	return v
}

// nextN returns the next n firing times of s after from.
func nextN(s Schedule, from time.Time, n int) []string {
	var out []string
	for range n {
		from = s.Next(from)
		out = append(out, from.Format("2006-01-02 15:04:05 Mon MST"))
	}
	return out
}

func TestCronNext(t *testing.T) {
	tests := []struct {
		expr  string
		after string
		want  []string
	}{
		{"*/5 * * * *", "2026-03-10 10:02:30", []string{"2026-03-10 10:05:00 Tue UTC", "2026-03-10 10:10:00 Tue UTC"}},
		// 09:00 in Berlin: 08:00 UTC before the clocks go forward on
		// 2026-03-29, 07:00 UTC after.
		{"CRON_TZ=Europe/Berlin 0 9 * * *", "2026-03-27 10:00:00", []string{"2026-03-28 08:00:00 Sat UTC", "2026-03-29 07:00:00 Sun UTC", "2026-03-30 07:00:00 Mon UTC"}},
		{"TZ=America/New_York 30 17 * * 1-5", "2026-11-24 00:00:00", []string{"2026-11-24 22:30:00 Tue UTC", "2026-11-25 22:30:00 Wed UTC"}},
		{"TZ=UTC 0 3 * * *", "2026-03-10 10:02:30", []string{"2026-03-11 03:00:00 Wed UTC"}},
		{"*/5 * * * *", "2026-03-10 10:05:00", []string{"2026-03-10 10:10:00 Tue UTC"}}, // strictly after
		{"*/5 * * * *", "2026-03-10 23:57:00", []string{"2026-03-11 00:00:00 Wed UTC"}},
		{"* * * * *", "2026-03-10 10:02:30", []string{"2026-03-10 10:03:00 Tue UTC", "2026-03-10 10:04:00 Tue UTC"}},
		{"@daily", "2026-03-10 10:02:30", []string{"2026-03-11 00:00:00 Wed UTC", "2026-03-12 00:00:00 Thu UTC"}},
		{"@midnight", "2026-03-10 00:00:00", []string{"2026-03-11 00:00:00 Wed UTC"}},
		{"@hourly", "2026-03-10 10:02:30", []string{"2026-03-10 11:00:00 Tue UTC"}},
		{"@weekly", "2026-03-10 10:02:30", []string{"2026-03-15 00:00:00 Sun UTC", "2026-03-22 00:00:00 Sun UTC"}},
		{"@monthly", "2026-03-10 10:02:30", []string{"2026-04-01 00:00:00 Wed UTC"}},
		{"@yearly", "2026-03-10 10:02:30", []string{"2027-01-01 00:00:00 Fri UTC"}},
		{"@annually", "2026-03-10 10:02:30", []string{"2027-01-01 00:00:00 Fri UTC"}},
		{"@every 90m", "2026-03-10 10:02:30", []string{"2026-03-10 11:32:30 Tue UTC", "2026-03-10 13:02:30 Tue UTC"}},
		// Values from Queuety PHP's own schedules row (next_run of '0 3 * * *'
		// added at 2026-11-22 04:18:46 UTC).
		{"0 3 * * *", "2026-11-22 04:18:46", []string{"2026-11-23 03:00:00 Mon UTC", "2026-11-24 03:00:00 Tue UTC"}},
		{"0 3 * * *", "2026-11-22 02:59:59", []string{"2026-11-22 03:00:00 Sun UTC"}},
		{"0 3 * * *", "2026-11-22 03:00:00", []string{"2026-11-23 03:00:00 Mon UTC"}},
		{"  0   3 * *  *  ", "2026-11-22 03:00:00", []string{"2026-11-23 03:00:00 Mon UTC"}},
		{"15,45 9-17/4 * * 1-5", "2026-03-13 16:00:00", []string{"2026-03-13 17:15:00 Fri UTC", "2026-03-13 17:45:00 Fri UTC", "2026-03-16 09:15:00 Mon UTC"}},
		// Month and year rollover.
		{"0 0 1 * *", "2026-01-31 23:59:00", []string{"2026-02-01 00:00:00 Sun UTC", "2026-03-01 00:00:00 Sun UTC"}},
		{"30 12 31 * *", "2026-01-31 13:00:00", []string{"2026-03-31 12:30:00 Tue UTC", "2026-05-31 12:30:00 Sun UTC"}},
		{"0 0 1 1 *", "2026-12-31 23:59:59", []string{"2027-01-01 00:00:00 Fri UTC", "2028-01-01 00:00:00 Sat UTC"}},
		{"59 23 31 12 *", "2026-12-31 23:59:00", []string{"2027-12-31 23:59:00 Fri UTC"}},
		{"0 0 29 2 *", "2026-03-01 00:00:00", []string{"2028-02-29 00:00:00 Tue UTC", "2032-02-29 00:00:00 Sun UTC"}},
		{"0 12 * 2 *", "2026-02-28 12:00:00", []string{"2027-02-01 12:00:00 Mon UTC"}},
		// Day of week: 0 and 7 are both Sunday.
		{"0 9 * * 0", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC", "2026-03-22 09:00:00 Sun UTC"}},
		{"0 9 * * 7", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC", "2026-03-22 09:00:00 Sun UTC"}},
		{"0 9 * * sun", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		{"0 9 * * 6,7", "2026-03-09 12:00:00", []string{"2026-03-14 09:00:00 Sat UTC", "2026-03-15 09:00:00 Sun UTC", "2026-03-21 09:00:00 Sat UTC"}},
		{"0 9 * * 5-7", "2026-03-09 12:00:00", []string{"2026-03-13 09:00:00 Fri UTC", "2026-03-14 09:00:00 Sat UTC", "2026-03-15 09:00:00 Sun UTC", "2026-03-20 09:00:00 Fri UTC"}},
		{"0 9 * * fri-7", "2026-03-09 12:00:00", []string{"2026-03-13 09:00:00 Fri UTC", "2026-03-14 09:00:00 Sat UTC", "2026-03-15 09:00:00 Sun UTC"}},
		{"0 9 * * 1-7/2", "2026-03-09 12:00:00", []string{"2026-03-11 09:00:00 Wed UTC", "2026-03-13 09:00:00 Fri UTC", "2026-03-15 09:00:00 Sun UTC", "2026-03-16 09:00:00 Mon UTC"}},
		{"0 9 * * 2-7/2", "2026-03-09 12:00:00", []string{"2026-03-10 09:00:00 Tue UTC", "2026-03-12 09:00:00 Thu UTC", "2026-03-14 09:00:00 Sat UTC", "2026-03-17 09:00:00 Tue UTC"}},
		{"0 9 * * 7-7", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		// Only one of day of month and day of week restricted: same as PHP.
		{"0 0 13 * *", "2026-01-01 00:00:00", []string{"2026-01-13 00:00:00 Tue UTC", "2026-02-13 00:00:00 Fri UTC"}},
		{"0 0 * * 5", "2026-01-01 00:00:00", []string{"2026-01-02 00:00:00 Fri UTC", "2026-01-09 00:00:00 Fri UTC"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" after "+tt.after, func(t *testing.T) {
			s, err := ParseCron(tt.expr)
			require.NoError(t, err)
			got := nextN(s, at(t, tt.after), len(tt.want))
			assert.Equal(t, tt.want, got, "Next sequence")
		})
	}
}

// TestCronDayOfMonthAndDayOfWeek: with both day fields restricted, a day
// must match both, as in Queuety PHP (not either, as in Vixie cron), for
// expressions users write and for stored rows alike.
func TestCronDayOfMonthAndDayOfWeek(t *testing.T) {
	want := []string{ // the Fridays the 13th
		"2026-02-13 00:00:00 Fri UTC",
		"2026-03-13 00:00:00 Fri UTC",
		"2026-11-13 00:00:00 Fri UTC",
		"2027-08-13 00:00:00 Fri UTC",
	}
	user, err := ParseCron("0 0 13 * 5")
	require.NoError(t, err)
	assert.Equal(t, want, nextN(user, at(t, "2026-01-01 00:00:00"), 4), "ParseCron")
	row, err := Parse(Cron, "0 0 13 * 5")
	require.NoError(t, err)
	assert.Equal(t, want, nextN(row, at(t, "2026-01-01 00:00:00"), 4), "Parse")
	// Names and 7 in ranges are rewritten, not combined differently.
	fri, err := ParseCron("0 0 13 jan-dec 5-5")
	require.NoError(t, err)
	assert.Equal(t, want[:2], nextN(fri, at(t, "2026-01-01 00:00:00"), 2), "ParseCron with names")
}

func TestCronEvaluatesInUTC(t *testing.T) {
	// Neither time.Local nor the location of the time passed to Next may
	// leak into the result.
	saved := time.Local
	time.Local = time.FixedZone("UTC+5:30", 5*3600+1800)
	defer func() { time.Local = saved }()

	s, err := ParseCron("0 3 * * *")
	require.NoError(t, err)
	want := at(t, "2026-11-23 03:00:00")
	for _, loc := range []*time.Location{time.UTC, time.Local, time.FixedZone("UTC-8", -8*3600)} {
		after := at(t, "2026-11-22 04:18:46").In(loc)
		got := s.Next(after)
		assert.WithinDuration(t, want, got, 0, "Next(%v)", after)
		assert.Same(t, time.UTC, got.Location(), "Next(%v) = %v, not in UTC", after, got)
	}
}

func TestCronErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"* * *", `schedexpr: invalid cron expression "* * *": expected exactly 5 fields (minute hour day-of-month month day-of-week), found 3`},
		{"* * * *", "expected exactly 5 fields"},
		{"0 * * * * *", "found 6"},
		{"", `schedexpr: invalid cron expression "": empty expression`},
		{"   ", "empty expression"},
		{"60 * * * *", `minute field "60": end of range (60) above maximum (59)`},
		{"* 24 * * *", `hour field "24": end of range (24) above maximum (23)`},
		{"* * 0 * *", `day of month field "0": beginning of range (0) below minimum (1)`},
		{"* * * 13 *", `month field "13": end of range (13) above maximum (12)`},
		{"* * * * 8", `day of week field "8": end of range (8) above maximum (6)`},
		{"* * * * 6-8", `day of week field "6-8": end of range (8)`},
		{"* * * * 5-1", "beginning of range (5) beyond end of range (1)"},
		{"*/0 * * * *", `minute field "*/0": step of range should be a positive number`},
		{"a * * * *", `minute field "a": failed to parse int from a`},
		{"0 0 * * monday", `day of week field "monday": failed to parse int from monday`},
		{"1,,2 * * * *", `minute field "1,,2" has an empty list item`},
		{"@fortnightly", "unrecognized descriptor: @fortnightly"},
		{"@every", "@every needs a Go duration"},
		{"@every 5 minutes", "@every needs a Go duration"},
		{"@every 0s", "@every duration must be at least 1s"},
		{"@every -5m", "@every duration must be at least 1s"},
		{"@every 500ms", "@every duration must be at least 1s"},
		{"TZ=Mars/Olympus 0 3 * * *", `schedexpr: invalid cron expression "TZ=Mars/Olympus 0 3 * * *": unknown time zone "Mars/Olympus"`},
		{"CRON_TZ=Europe/Berlin @every 5m", "@every does not take a time zone"},
		{"CRON_TZ= 0 3 * * *", "unknown time zone"},
		{"0 0 30 2 *", `schedexpr: invalid cron expression "0 0 30 2 *": it never fires`},
		{"0 0 31 4,6,9,11 *", "it never fires"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			s, err := ParseCron(tt.expr)
			require.Error(t, err, "ParseCron(%q) = %v, want an error", tt.expr, s)
			assert.ErrorContains(t, err, tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "schedexpr: invalid cron expression "), "error %q lacks the package prefix", err)
		})
	}
}

// TestCanonicalCron: the stored form of a user's expression keeps what
// Queuety PHP reads the same and rewrites what it would read differently.
func TestCanonicalCron(t *testing.T) {
	tests := map[string]string{
		"*/5 * * * *":                     "*/5 * * * *",
		"  0   3 * *  *  ":                "0 3 * * *",
		"15,45 9-17/4 * * 1-5":            "15,45 9-17/4 * * 1-5",
		"0 0 13 * 5":                      "0 0 13 * 5",
		"0 9 * * 7":                       "0 9 * * 7",
		"0 9 * * 6,7":                     "0 9 * * 6,7",
		"0 9 * * 5-7":                     "0 9 * * 0,5,6",
		"0 9 * * fri-7":                   "0 9 * * 0,5,6",
		"0 9 * * 1-7/2":                   "0 9 * * 0,1,3,5",
		"0 9 * * 7-7":                     "0 9 * * 0",
		"0 9 * * mon-fri":                 "0 9 * * 1-5",
		"0 9 * * SUN":                     "0 9 * * 0",
		"0 9 ? * *":                       "0 9 * * *",
		"0 9 * jan,jul *":                 "0 9 * 1,7 *",
		"5/15 * * * *":                    "5,20,35,50 * * * *",
		"0 */6 * * *":                     "0 */6 * * *",
		"@daily":                          "0 0 * * *",
		"@weekly":                         "0 0 * * 0",
		"@HOURLY":                         "0 * * * *",
		"CRON_TZ=Europe/Berlin 0 9 * * *": "CRON_TZ=Europe/Berlin 0 9 * * *",
		"TZ=UTC 0 9 * * sat":              "TZ=UTC 0 9 * * 6",
	}
	for in, want := range tests {
		got, err := CanonicalCron(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, "CanonicalCron(%q)", in)
		if strings.Contains(got, "=") {
			continue
		}
		// The stored form, read as Queuety PHP reads it, fires when the
		// user's expression does.
		user, err := ParseCron(in)
		require.NoError(t, err)
		row, err := Parse(Cron, got)
		require.NoError(t, err)
		from := at(t, "2026-03-09 12:00:00")
		assert.Equal(t, nextN(user, from, 20), nextN(row, from, 20), "%q stored as %q", in, got)
	}
	_, err := CanonicalCron("@every 5m")
	assert.ErrorContains(t, err, "@every is an interval")
	_, err = CanonicalCron("0 0 30 2 *")
	assert.ErrorContains(t, err, "it never fires")
}

// TestParseRowAsQueuetyPHP: a stored row means what Queuety PHP 0.22's
// CronExpression makes of it, quirks included (the interop tests compare
// with PHP itself).
func TestParseRowAsQueuetyPHP(t *testing.T) {
	tests := []struct {
		expr  string
		after string
		want  []string
	}{
		// A range of days of week stops at 6: 7 is Sunday only alone.
		{"0 9 * * 5-7", "2026-03-09 12:00:00", []string{"2026-03-13 09:00:00 Fri UTC", "2026-03-14 09:00:00 Sat UTC", "2026-03-20 09:00:00 Fri UTC"}},
		{"0 9 * * 7", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		{"0 9 * * 1,7", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC", "2026-03-16 09:00:00 Mon UTC"}},
		// Names and "?" are (int) 0: "mon" and "?" are Sunday.
		{"0 9 * * mon", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		{"0 9 * * ?", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		{"0 9 * * mon-fri", "2026-03-09 12:00:00", []string{"2026-03-15 09:00:00 Sun UTC"}},
		// A month of 0 never matches; "a/n" never matches.
		{"0 9 * jan *", "2026-03-09 12:00:00", []string{"0001-01-01 00:00:00 Mon UTC"}},
		{"5/15 * * * *", "2026-03-09 12:00:00", []string{"0001-01-01 00:00:00 Mon UTC"}},
		// Out-of-range values are accepted and never match.
		{"60 * * * *", "2026-03-09 12:00:00", []string{"0001-01-01 00:00:00 Mon UTC"}},
		{"0,60 * * * *", "2026-03-09 12:00:00", []string{"2026-03-09 13:00:00 Mon UTC"}},
		// Steps count from the field's minimum or the range's start.
		{"0 0 */10 * *", "2026-03-09 12:00:00", []string{"2026-03-11 00:00:00 Wed UTC", "2026-03-21 00:00:00 Sat UTC", "2026-03-31 00:00:00 Tue UTC", "2026-04-01 00:00:00 Wed UTC"}},
		{"0 9 * * 1-7/2", "2026-03-09 12:00:00", []string{"2026-03-11 09:00:00 Wed UTC", "2026-03-13 09:00:00 Fri UTC", "2026-03-16 09:00:00 Mon UTC"}},
		// Numbers are read as PHP's (int) cast reads them; list parts are trimmed.
		{"1e1 9 * * *", "2026-03-09 12:00:00", []string{"2026-03-10 09:10:00 Tue UTC"}},
		{"5x,30 9 * * *", "2026-03-09 12:00:00", []string{"2026-03-10 09:05:00 Tue UTC", "2026-03-10 09:30:00 Tue UTC"}},
		// Friday the 13th: both day fields must match.
		{"0 0 13 * 5", "2026-01-01 00:00:00", []string{"2026-02-13 00:00:00 Fri UTC", "2026-03-13 00:00:00 Fri UTC"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			s, err := Parse(Cron, tt.expr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, nextN(s, at(t, tt.after), len(tt.want)))
		})
	}
	for expr, want := range map[string]string{
		"* * * *":       "expected exactly 5 fields",
		"*/0 * * * *":   "step of 0",
		"0 0 1-5/0 * *": "step of 0",
	} {
		_, err := Parse(Cron, expr)
		assert.ErrorContains(t, err, want, expr)
	}
}

func TestPHPInt(t *testing.T) {
	for in, want := range map[string]int{
		"5": 5, " 5": 5, "5abc": 5, "mon": 0, "": 0, "+3": 3, "-2": -2, "0x1A": 0, "1e2": 100,
		".5": 0, "5.": 5, "1e": 1, "\f5": 5, "1e30": math.MaxInt64, "-1e30": math.MinInt64,
		"99999999999999999999": math.MaxInt64, "?": 0,
	} {
		assert.Equal(t, want, phpInt(in), "phpInt(%q)", in)
	}
}

func TestParseInterval(t *testing.T) {
	tests := []struct {
		expr string
		want time.Duration
	}{
		{"30 seconds", 30 * time.Second},
		{"1 second", time.Second},
		{"5 minutes", 5 * time.Minute},
		{"1 minute", time.Minute},
		{"15 minutes", 15 * time.Minute},
		{"1 hour", time.Hour},
		{"2 hours", 2 * time.Hour},
		{"2 days", 48 * time.Hour},
		{"1 day", 24 * time.Hour},
		{"1 week", 7 * 24 * time.Hour},
		{"3 weeks", 21 * 24 * time.Hour},
		{"3600 seconds", time.Hour},
		{"86400 seconds", 24 * time.Hour},
		{"10 sec", 10 * time.Second},
		{"10 secs", 10 * time.Second},
		{"10 min", 10 * time.Minute},
		{"10 mins", 10 * time.Minute},
		{"1 fortnight", 14 * 24 * time.Hour},
		{"+5 minutes", 5 * time.Minute},
		{"  +5 minutes\n", 5 * time.Minute},
		{"+ 5 minutes", 5 * time.Minute},
		{"5 MINUTES", 5 * time.Minute},
		{"1 Hour", time.Hour},
		{"5min", 5 * time.Minute},
		{"5   minutes", 5 * time.Minute},
		{"1 hour 30 minutes", 90 * time.Minute},
		{"+1 hour +30 minutes", 90 * time.Minute},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{" 2h ", 2 * time.Hour},
		{"1.5h", 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := ParseInterval(tt.expr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ParseInterval(%q)", tt.expr)
		})
	}
}

func TestParseIntervalErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"5 lightyears", `schedexpr: invalid interval "5 lightyears": unknown unit "lightyears"`},
		{"", `schedexpr: invalid interval "": empty expression`},
		{"   ", "empty expression"},
		{"0 seconds", `schedexpr: invalid interval "0 seconds": must be at least 1s`},
		{"0s", "must be at least 1s"},
		{"500ms", "must be at least 1s"},
		{"-5 minutes", "negative intervals are not allowed"},
		{"-5m", "must be at least 1s"},
		{"5", "missing unit after 5"},
		{"minutes", `expected a number at "minutes"`},
		{"5 minutes ago", `expected a number at "ago"`},
		{"1.5 hours", `unexpected ".5 hours"`},
		{"1 month", `unit "month" has no fixed length; use a cron expression`},
		{"2 years", `unit "years" has no fixed length`},
		{"1 weekday", `unit "weekday" has no fixed length`},
		{"99999999999999999999 seconds", "too large"},
		{"9999999999 weeks", "interval is too long"},
		{"200000 weeks 200000 weeks 200000 weeks 200000 weeks 200000 weeks", "interval is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			d, err := ParseInterval(tt.expr)
			require.Error(t, err, "ParseInterval(%q) = %v, want an error", tt.expr, d)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestParse(t *testing.T) {
	// Values from Queuety PHP's schedules rows: both schedules were added at
	// 2026-11-22 04:18:46 UTC.
	added := at(t, "2026-11-22 04:18:46")
	tests := []struct {
		typ  Type
		expr string
		want string
	}{
		{Interval, "15 minutes", "2026-11-22 04:33:46"},
		{Cron, "0 3 * * *", "2026-11-23 03:00:00"},
		{Type("interval"), "1 hour", "2026-11-22 05:18:46"},
		{Type("cron"), "@hourly", "2026-11-22 05:00:00"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.typ, tt.expr)
		require.NoError(t, err, "Parse(%q, %q)", tt.typ, tt.expr)
		got := s.Next(added.In(time.FixedZone("UTC+2", 7200)))
		assert.Equal(t, tt.want, got.Format(time.DateTime), "Parse(%q, %q).Next", tt.typ, tt.expr)
		assert.Same(t, time.UTC, got.Location(), "Parse(%q, %q).Next = %v, not in UTC", tt.typ, tt.expr, got)
	}

	_, err := Parse("weekly", "1 week")
	assert.EqualError(t, err, `schedexpr: unknown expression type "weekly" (want "interval" or "cron")`, "Parse with unknown type")
	_, err = Parse(Interval, "0 3 * * *")
	assert.ErrorContains(t, err, "invalid interval", "Parse(Interval, cron expression)")
	_, err = Parse(Cron, "15 minutes")
	assert.ErrorContains(t, err, "invalid cron expression", "Parse(Cron, interval)")
}

func TestErrorsWrapRobfigReasons(t *testing.T) {
	_, err := ParseCron("* * *")
	assert.Error(t, errors.Unwrap(err), "error %v does not wrap the parser's reason", err)
}
