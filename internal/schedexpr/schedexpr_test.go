package schedexpr

import (
	"errors"
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

// TestCronDayOfMonthOrDayOfWeek documents the deliberate difference from
// Queuety PHP: with both day fields restricted, robfig/cron fires when
// either matches (Vixie cron), PHP only when both match.
func TestCronDayOfMonthOrDayOfWeek(t *testing.T) {
	s, err := ParseCron("0 0 13 * 5")
	require.NoError(t, err)
	got := nextN(s, at(t, "2026-01-01 00:00:00"), 5)
	want := []string{
		"2026-01-02 00:00:00 Fri UTC", // a Friday that is not the 13th
		"2026-01-09 00:00:00 Fri UTC",
		"2026-01-13 00:00:00 Tue UTC", // a 13th that is not a Friday
		"2026-01-16 00:00:00 Fri UTC",
		"2026-01-23 00:00:00 Fri UTC",
	}
	assert.Equal(t, want, got, "Next sequence")
	// Queuety PHP's first run for the same expression and start is Friday
	// 2026-02-13, the first Friday the 13th; here that day is just one of
	// many matches.
	next := s.Next(at(t, "2026-02-12 00:00:00"))
	assert.WithinDuration(t, at(t, "2026-02-13 00:00:00"), next, 0, "Next(2026-02-12)")
}

func TestCronEvaluatesInUTC(t *testing.T) {
	// robfig/cron captures time.Local when parsing and uses the location of
	// the time passed to Next; neither may leak into the result.
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
		{"* * *", `schedexpr: invalid cron expression "* * *": expected exactly 5 fields, found 3: [* * *]`},
		{"* * * *", "expected exactly 5 fields, found 4"},
		{"0 * * * * *", "expected exactly 5 fields, found 6"},
		{"", `schedexpr: invalid cron expression "": empty spec string`},
		{"   ", "empty spec string"},
		{"60 * * * *", "end of range (60) above maximum (59)"},
		{"* 24 * * *", "end of range (24) above maximum (23)"},
		{"* * 0 * *", "beginning of range (0) below minimum (1)"},
		{"* * * 13 *", "end of range (13) above maximum (12)"},
		{"* * * * 8", "end of range (8) above maximum (6)"},
		{"* * * * 6-8", "end of range (8) above maximum (6)"},
		{"*/0 * * * *", "step of range should be a positive number"},
		{"a * * * *", "failed to parse int from a"},
		{"@fortnightly", "unrecognized descriptor: @fortnightly"},
		{"@every", "unrecognized descriptor: @every"},
		{"@every 5 minutes", "failed to parse duration"},
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

func TestNormalizeDayOfWeek(t *testing.T) {
	tests := map[string]string{
		"*":       "*",
		"7":       "0",
		"0":       "0",
		"1,7":     "1,0",
		"5-7":     "5-6,0",
		"FRI-7":   "FRI-6,0",
		"1-7/2":   "1-6/2,0",
		"2-7/2":   "2-6/2",
		"7-7":     "0",
		"7/2":     "0",
		"*/2":     "*/2",
		"1-5":     "1-5",
		"x-7":     "x-7",
		"1-7/x":   "1-7/x",
		"6-7,1-3": "6-6,0,1-3",
	}
	for in, want := range tests {
		assert.Equal(t, want, normalizeDayOfWeek(in), "normalizeDayOfWeek(%q)", in)
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
