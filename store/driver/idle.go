package driver

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// IdleReader is an optional interface of a Store: the reads an idle
// worker makes while it waits, each one statement outside a transaction,
// so that waiting costs the database as little as it can. A store without
// it is polled as before (a claim transaction per poll, the sweeps and
// the schedule tick on their intervals).
type IdleReader interface {
	// JobNextDue returns the earliest available_at of the pending jobs of
	// p.Queue and p.Handlers that a claim could take once they are due
	// (their workflow running or paused, their dependency completed, the
	// queue not paused); p's other fields are ignored. ok is false when
	// there is none.
	JobNextDue(ctx context.Context, p ClaimParams) (at time.Time, ok bool, err error)
	// ScheduleNextDueRead is Tx.ScheduleNextDue outside a transaction;
	// buffered also says whether an enabled schedule holds a buffered
	// firing (pending_run set).
	ScheduleNextDueRead(ctx context.Context) (next time.Time, buffered bool, err error)
	// MaintenanceDue reads, for the sweeps that find rows by a stored
	// time, the earliest such time (see MaintenanceDue).
	MaintenanceDue(ctx context.Context) (MaintenanceDue, error)
	// WorkerSaveOne is Tx.WorkerSave as one statement outside a
	// transaction: an idle worker's heartbeat.
	WorkerSaveOne(ctx context.Context, w *queuetytype.Worker) error
}

// MaintenanceDue holds the earliest stored times the sweeps act on; a zero
// time means no row.
type MaintenanceDue struct {
	// Unreserved is set when a processing job has no reserved_at (stale
	// at once).
	Unreserved bool
	// Reserved is the earliest reserved_at of the processing jobs: none
	// is stale before Reserved plus the lease timeout.
	Reserved time.Time
	// Activity is the earliest armed activity deadline of any job
	// (schedule-to-close, schedule-to-start, heartbeat, start-to-close).
	Activity time.Time
	// Wait is the earliest wait deadline of the workflows waiting for a
	// signal.
	Wait time.Time
	// MachineTimer is the earliest state-machine timer.
	MachineTimer time.Time
}
