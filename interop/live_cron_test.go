package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/schedexpr"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// phpCronQuirks are cron expressions as users write them into Queuety PHP,
// chosen for every rule its CronExpression has: both day fields restricted,
// ranges, steps from "*" and from a range start, "a/n", 7 alone and in a
// range, names and "?" (read as 0), out-of-range values, (int) casts of
// odd numbers, and lists of all of these.
var phpCronQuirks = []string{
	"0 0 13 * 5", "30 6 1,15 * 1", "0 0 */10 * *", "*/7 9-17 * * 1-5",
	"0 9 * * 5-7", "0 9 * * 7", "0 9 * * 1,7", "0 9 * * 1-7/2",
	"0 9 * * mon", "0 9 * * mon-fri", "0 9 ? * *", "0 9 * jan *",
	"5/15 * * * *", "0,60 * * * *", "1e1 9 * * *", "5x,30 9 * * *",
	"0 12 * 2 *", "0 0 29 2 *", "59 23 31 12 *", "0 0 31 4 *",
	"15,45 */4 * * 0", "0 0 1-7 * 1", "10-50/20 1-23/11 2-28/13 1-12/5 *",
}

// TestLiveCronNextRunsAgreeWithPHP asks Queuety PHP's own CronExpression
// for the next run times of each expression in phpCronQuirks, chained from
// several start times, and checks that Go's reading of the stored
// expression (schedexpr.Parse, what a Go tick uses) gives the same times,
// PHP gives up after a year where Go searches on: there Go's next time
// must lie beyond that year.
func TestLiveCronNextRunsAgreeWithPHP(t *testing.T) {
	_, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	starts := []string{"2026-01-01 00:00:00", "2026-02-28 23:59:30", "2027-12-31 23:58:00", "2028-02-28 12:00:00"}
	exprs, err := json.Marshal(phpCronQuirks)
	require.NoError(t, err)
	startsJSON, err := json.Marshal(starts)
	require.NoError(t, err)
	out := php.eval(`
$utc = new \DateTimeZone('UTC');
$res = array();
foreach ( json_decode('` + string(exprs) + `') as $expr ) {
	foreach ( json_decode('` + string(startsJSON) + `') as $start ) {
		$t = new \DateTimeImmutable( $start, $utc );
		$runs = array();
		for ( $i = 0; $i < 6; $i++ ) {
			try {
				$t = \Queuety\CronExpression::next_run( $expr, $t );
				$runs[] = $t->format( 'Y-m-d H:i:s' );
			} catch ( \Throwable $e ) {
				$runs[] = 'none';
				break;
			}
		}
		$res[ $expr . ' @ ' . $start ] = $runs;
	}
}
echo json_encode( $res );`)
	var want map[string][]string
	require.NoError(t, json.Unmarshal([]byte(out), &want), out)
	require.Len(t, want, len(phpCronQuirks)*len(starts))
	for _, expr := range phpCronQuirks {
		s, err := schedexpr.Parse(schedexpr.Cron, expr)
		require.NoError(t, err, expr)
		for _, start := range starts {
			from, err := time.Parse(time.DateTime, start)
			require.NoError(t, err)
			var got []string
			for range want[expr+" @ "+start] {
				next := s.Next(from)
				if next.IsZero() || next.After(from.AddDate(1, 0, 0)) {
					got = append(got, "none")
					break
				}
				got = append(got, next.Format(time.DateTime))
				from = next
			}
			assert.Equal(t, want[expr+" @ "+start], got, "%q after %s", expr, start)
		}
	}
}

// TestLiveCronScheduleFromPHPTickedByGo: Queuety PHP creates a cron
// schedule whose day of month and day of week are both restricted (the
// first Monday of the month: days 1-7 AND Monday); a Go worker ticks it,
// and it fires on exactly the slots PHP computes for it, moving next_run
// to PHP's next slot each time, and not on the other days 1-7 or Mondays
// that Vixie cron would fire on.
func TestLiveCronScheduleFromPHPTickedByGo(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	const expr = "30 6 1-7 * 1"
	var created struct {
		ID    int64    `json:"id"`
		Slots []string `json:"slots"`
	}
	// PHP adds the schedule (next_run from its clock), then lists the slots
	// after that first one with its own CronExpression.
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
$id = \Queuety\Queuety::schedule( 'app.first_monday' )->cron( '`+expr+`' )->id();
$s = \Queuety\Queuety::scheduler()->find( 'app.first_monday' );
$t = $s->next_run;
$slots = array( $t->format( 'Y-m-d H:i:s' ) );
for ( $i = 0; $i < 5; $i++ ) {
	$t = \Queuety\CronExpression::next_run( '`+expr+`', $t );
	$slots[] = $t->format( 'Y-m-d H:i:s' );
}
echo json_encode( array( 'id' => $id, 'slots' => $slots ) );`)), &created))
	require.Len(t, created.Slots, 6)

	slot := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, s)
		require.NoError(t, err)
		return v
	}
	clock := queuety.NewFakeClock(slot(created.Slots[0]).Add(-time.Hour))
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	w := worker.New(c, worker.WithLogger(slog.New(slog.DiscardHandler)))
	ran := 0
	w.HandleJob("app.first_monday", func(context.Context, queuety.Payload) error { ran++; return nil })

	for i := range len(created.Slots) - 1 {
		at := slot(created.Slots[i])
		// A minute before the slot nothing fires.
		clock.Set(at.Add(-time.Minute))
		st, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Zero(t, st.SchedulesFired, "fired before %s", at)
		clock.Set(at)
		st, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 1, st.SchedulesFired, "slot %s", at)
		s, err := c.ScheduleByID(ctx, created.ID)
		require.NoError(t, err)
		assert.Equal(t, created.Slots[i+1], s.NextRun.UTC().Format(time.DateTime), "next_run after the slot %s", at)
		assert.Equal(t, time.Monday, at.Weekday(), "slot %s", at)
		assert.LessOrEqual(t, at.Day(), 7, "slot %s", at)
	}
	assert.Equal(t, len(created.Slots)-1, ran, "jobs run")
	require.True(t, strings.HasSuffix(created.Slots[0], "06:30:00"), fmt.Sprint(created.Slots))
}
