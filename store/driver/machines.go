package driver

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// Machine is one row of Queuety's state_machines table. Zero values stand
// for SQL NULL where the column is nullable.
type Machine struct {
	ID                int64
	Name              string
	Status            queuetytype.MachineStatus
	CurrentState      string
	State             []byte // JSON text, as written
	Definition        []byte // JSON text, as written
	DefinitionHash    string
	DefinitionVersion string
	IdempotencyKey    string
	StartedAt         time.Time
	UpdatedAt         time.Time
	CompletedAt       time.Time
	FailedAt          time.Time
	ErrorMessage      string
}

// MachineTimer is an armed state timeout of the Go engine's machine
// timers table ({prefix}queuety_go_machine_timers): one per machine at
// most, for the state it was entered into by the event row EntryEventID.
type MachineTimer struct {
	MachineID    int64
	StateName    string
	EntryEventID int64
	Event        string
	FireAt       time.Time
}

// MachineTx holds the operations on Queuety's state machine tables and
// the Go engine's machine timers.
type MachineTx interface {
	// MachineInsert inserts a machine and sets its ID. It returns
	// ErrDuplicate when another machine has the same idempotency key.
	MachineInsert(ctx context.Context, m *Machine) error
	// MachineGet reads one machine, locked with lock.
	MachineGet(ctx context.Context, id int64, lock LockMode) (*Machine, error)
	// MachineIDByKey returns the id of the machine with this idempotency
	// key, or 0.
	MachineIDByKey(ctx context.Context, key string) (int64, error)
	// MachineUpdate writes status, current_state, state, completed_at,
	// failed_at, error_message and updated_at by id.
	MachineUpdate(ctx context.Context, m *Machine) error
	// MachineList lists machines newest first (without state and
	// definition unless withDefinition).
	MachineList(ctx context.Context, f queuetytype.MachineFilter, withDefinition bool) ([]*Machine, error)
	// MachineEventInsert inserts one state_machine_events row and sets its
	// ID.
	MachineEventInsert(ctx context.Context, e *queuetytype.MachineEvent) error
	// MachineEventList lists a machine's events in id order; limit 0 reads
	// them all.
	MachineEventList(ctx context.Context, machineID int64, limit, offset int) ([]*queuetytype.MachineEvent, error)
	// MachineEntryJob returns the job_id of the machine's last
	// action_enqueued event: the action job of the entry the machine is
	// running while its status is running. 0 when there is none.
	MachineEntryJob(ctx context.Context, machineID int64) (int64, error)
	// MachineStateAt returns the state_after text of the machine's last
	// event at or before eventID that has one, or nil.
	MachineStateAt(ctx context.Context, machineID, eventID int64) ([]byte, error)
	// MachineTimerSet arms the machine's timer, replacing any other.
	MachineTimerSet(ctx context.Context, t MachineTimer) error
	// MachineTimerClear removes the machine's timer.
	MachineTimerClear(ctx context.Context, machineID int64) error
	// MachineTimerTake removes the machine's timer armed by entryEventID
	// and reports whether there was one.
	MachineTimerTake(ctx context.Context, machineID, entryEventID int64) (bool, error)
	// MachineTimersDue returns up to limit timers due at now, earliest
	// first.
	MachineTimersDue(ctx context.Context, now time.Time, limit int) ([]MachineTimer, error)
}
