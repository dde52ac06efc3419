package engine

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// NextDue returns the earliest time a job of queues and handlers that a
// claim could take falls due (it may have passed), read with one
// statement per queue outside a transaction. ok is false when no such job
// is pending; known is false when the store cannot tell
// (driver.IdleReader), and the caller then claims as it would have.
func (e *Engine) NextDue(ctx context.Context, queues, handlers []string) (at time.Time, ok, known bool, err error) {
	r, can := e.store.(driver.IdleReader)
	if !can {
		return time.Time{}, false, false, nil
	}
	for _, q := range queues {
		t, found, err := r.JobNextDue(ctx, driver.ClaimParams{Queue: q, Handlers: handlers})
		if err != nil {
			return time.Time{}, false, true, wrap("read the next due job", err)
		}
		if found && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok, true, nil
}

// MaintenanceDue reads the earliest stored times the sweeps act on, in
// one statement outside a transaction; known is false when the store
// cannot tell (driver.IdleReader).
func (e *Engine) MaintenanceDue(ctx context.Context) (d driver.MaintenanceDue, known bool, err error) {
	r, can := e.store.(driver.IdleReader)
	if !can {
		return d, false, nil
	}
	d, err = r.MaintenanceDue(ctx)
	if err != nil {
		return d, true, wrap("read when the sweeps are due", err)
	}
	return d, true, nil
}
