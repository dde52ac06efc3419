package schedexpr_test

import (
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/schedexpr"
)

func ExampleParse() {
	// A scheduler tick at 04:18:46 UTC computes each due schedule's next_run
	// from the tick time.
	now := time.Date(2026, time.November, 22, 4, 18, 46, 0, time.UTC)

	rows := []struct {
		expression     string
		expressionType schedexpr.Type
	}{
		{"15 minutes", schedexpr.Interval},
		{"0 3 * * *", schedexpr.Cron},
		{"*/5 * * * *", schedexpr.Cron},
		{"@weekly", schedexpr.Cron},
	}
	for _, row := range rows {
		s, err := schedexpr.Parse(row.expressionType, row.expression)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-8s %-14q next_run %s\n", row.expressionType, row.expression, s.Next(now).Format(time.DateTime))
	}

	_, err := schedexpr.Parse(schedexpr.Interval, "5 fortnightz")
	fmt.Println(err)
	// Output:
	// interval "15 minutes"   next_run 2026-11-22 04:33:46
	// cron     "0 3 * * *"    next_run 2026-11-23 03:00:00
	// cron     "*/5 * * * *"  next_run 2026-11-22 04:20:00
	// cron     "@weekly"      next_run 2026-11-29 00:00:00
	// schedexpr: invalid interval "5 fortnightz": unknown unit "fortnightz"
}

func ExampleCanonicalCron() {
	// What a user writes is stored in the fields Queuety PHP reads the same
	// way, so both runtimes fire the row on the same slots.
	for _, expr := range []string{"0 9 * * mon-fri", "0 9 * * 5-7", "@daily", "0 0 13 * 5"} {
		stored, err := schedexpr.CanonicalCron(expr)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-16q stored as %q\n", expr, stored)
	}
	// Both day fields restricted: a day must match both (Friday the 13th).
	s, _ := schedexpr.Parse(schedexpr.Cron, "0 0 13 * 5")
	fmt.Println(s.Next(time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)).Format(time.DateTime))
	// Output:
	// "0 9 * * mon-fri" stored as "0 9 * * 1-5"
	// "0 9 * * 5-7"    stored as "0 9 * * 0,5,6"
	// "@daily"         stored as "0 0 * * *"
	// "0 0 13 * 5"     stored as "0 0 13 * 5"
	// 2026-02-13 00:00:00
}
