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
