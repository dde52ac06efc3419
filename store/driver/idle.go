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
	// time or state, the earliest such time or whether such rows exist
	// (see MaintenanceDue).
	MaintenanceDue(ctx context.Context) (MaintenanceDue, error)
	// WorkerSaveOne is Tx.WorkerSave as one statement outside a
	// transaction: an idle worker's heartbeat.
	WorkerSaveOne(ctx context.Context, w *queuetytype.Worker) error
}

// MaintenanceDue holds the stored times and states the sweeps act on; a
// zero time means no row.
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
	// Deadline is the earliest execution or run deadline (deadline_at,
	// run_deadline_at) of the workflows that are not terminal.
	Deadline time.Time
	// FailedDeadline is the latest deadline_at of the failed workflows:
	// none expired at its deadline within a lookback before that time
	// less the lookback.
	FailedDeadline time.Time
	// Failed is the latest failed_at of the failed workflows, and
	// Cancelled the latest completed_at of the cancelled ones.
	Failed, Cancelled time.Time
	// Running is set when a workflow is running.
	Running bool
	// WaitingForWorkflows is set when a workflow waits for other
	// workflows (waiting_for_workflows).
	WaitingForWorkflows bool
	// BatchOpen is set when a batch has not finished, and BatchFinished
	// is the latest finished_at of the batches.
	BatchOpen     bool
	BatchFinished time.Time
	// WorkerHeartbeat is the earliest last heartbeat in the worker
	// registry.
	WorkerHeartbeat time.Time
	// HeldClaims is the earliest expiry of the held claims' journal rows
	// (stores that hold claims): a held transaction's process died if its
	// row is still there then, and stale recovery counts its attempts.
	HeldClaims time.Time
}

// WebhookReader is an optional interface of a Store: the webhooks'
// list as one statement outside a transaction, which a running worker
// reads again every refresh interval.
type WebhookReader interface {
	// WebhookListRead is Tx.WebhookList outside a transaction.
	WebhookListRead(ctx context.Context, event string) ([]*Webhook, error)
}
