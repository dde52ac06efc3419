package sweep

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// TickSchedules fires the due schedules: up to limit rows taken with SKIP
// LOCKED, each changed under its lock with a compare-and-set on next_run
// (engine.TickLocked), so any number of workers and processes ticking at
// once fire every due slot exactly once. It reports how many jobs or
// workflows it dispatched, how many due slots got no firing of their own
// under their schedule's catch-up policy (each such schedule is logged as
// a warning once the tick committed), and whether calling it again may
// fire more: a full batch was due and the tick moved at least one of its
// schedules on (buffered firings still waiting for their runs alone do not
// count, or a caller looping on it would spin until those runs end), or a
// CatchUpAll schedule has more missed slots than one tick fires.
func TickSchedules(ctx context.Context, e *engine.Engine, limit int) (engine.ScheduleTick, error) {
	var notes engine.TickNotes
	find := func(tx driver.Tx, ctx context.Context, p driver.ExpiredParams) ([]*driver.Schedule, error) {
		notes.Reset() // the transaction may run again
		return tx.ScheduleFindDue(ctx, p)
	}
	n, more, err := batch(ctx, e, "tick schedules", limit, find,
		func(ctx context.Context, tx driver.Tx, s *driver.Schedule, now time.Time) (int, bool, error) {
			return e.TickLocked(ctx, tx, s, now, &notes)
		})
	if err != nil {
		return engine.ScheduleTick{}, err
	}
	return e.TickCommitted(n, more, &notes), nil
}
