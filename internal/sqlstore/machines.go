package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

const machineListCols = "id, name, status, current_state, definition_hash, definition_version, idempotency_key, " +
	"started_at, updated_at, completed_at, failed_at, error_message"

const machineCols = machineListCols + ", state, definition"

const machineEventCols = "id, machine_id, job_id, state_name, handler, event, event_name, transition_name, queue, attempt, " +
	"input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at"

func scanMachine(withBody bool) func(scanner) (*driver.Machine, error) {
	return func(sc scanner) (*driver.Machine, error) {
		m := &driver.Machine{}
		var status string
		dest := []any{intOf[int64]{&m.ID}, nullString{&m.Name}, &status, nullString{&m.CurrentState}, nullString{&m.DefinitionHash},
			nullString{&m.DefinitionVersion}, nullString{&m.IdempotencyKey}, nullTime{&m.StartedAt}, nullTime{&m.UpdatedAt},
			nullTime{&m.CompletedAt}, nullTime{&m.FailedAt}, nullString{&m.ErrorMessage}}
		if withBody {
			dest = append(dest, nullBytes{&m.State}, nullBytes{&m.Definition})
		}
		if err := sc.Scan(dest...); err != nil {
			return nil, err
		}
		m.Status = queuetytype.MachineStatus(status)
		return m, nil
	}
}

func scanMachineEvent(sc scanner) (*queuetytype.MachineEvent, error) {
	e := &queuetytype.MachineEvent{}
	var event string
	var duration int64
	var durationNull sql.NullInt64
	err := sc.Scan(intOf[int64]{&e.ID}, intOf[int64]{&e.MachineID}, nullInt{&e.JobID}, nullString{&e.StateName}, nullString{&e.Handler},
		&event, nullString{&e.EventName}, nullString{&e.TransitionName}, nullString{&e.Queue}, nullIntPtr{&e.Attempt},
		nullBytes{&e.Input}, nullBytes{&e.Output}, nullBytes{&e.StateBefore}, nullBytes{&e.StateAfter}, nullBytes{&e.Context},
		nullBytes{&e.Artifacts}, nullBytes{&e.Chunks}, nullBytes{&e.Error}, &durationNull, nullTime{&e.CreatedAt})
	if err != nil {
		return nil, err
	}
	e.Event = queuetytype.MachineEventType(event)
	if durationNull.Valid {
		duration = durationNull.Int64
		e.DurationMS = &duration
	}
	return e, nil
}

// MachineInsert implements driver.Tx.
func (t *txn) MachineInsert(ctx context.Context, m *driver.Machine) error {
	q := "INSERT INTO " + t.s.T.StateMachines + " (name, status, current_state, state, definition, definition_hash, definition_version, " +
		"idempotency_key, started_at, updated_at, completed_at, failed_at, error_message) VALUES (" + placeholders(13) + ")"
	var ids []int64
	err := t.mayConflict(ctx, func() (err error) {
		ids, err = t.insert(ctx, q, 1, m.Name, string(m.Status), m.CurrentState, string(m.State), string(m.Definition),
			nullStr(m.DefinitionHash), nullStr(m.DefinitionVersion), nullStr(m.IdempotencyKey), t.sec(m.StartedAt), t.sec(m.UpdatedAt),
			t.sec(m.CompletedAt), t.sec(m.FailedAt), nullStr(m.ErrorMessage))
		return err
	})
	if err != nil {
		if t.s.D.Duplicate(err) {
			return fmt.Errorf("insert state machine: %w", driver.ErrDuplicate)
		}
		return fmt.Errorf("insert state machine: %w", err)
	}
	m.ID = ids[0]
	return nil
}

// MachineGet implements driver.Tx.
func (t *txn) MachineGet(ctx context.Context, id int64, lock driver.LockMode) (*driver.Machine, error) {
	return queryOne(ctx, t.tx, scanMachine(true), "state machine", id,
		"SELECT "+machineCols+" FROM "+t.s.T.StateMachines+" WHERE id = ?"+t.lock(lock))
}

// MachineIDByKey implements driver.Tx.
func (t *txn) MachineIDByKey(ctx context.Context, key string) (int64, error) {
	var id int64
	err := t.tx.QueryRowContext(ctx, "SELECT id FROM "+t.s.T.StateMachines+" WHERE idempotency_key = ? LIMIT 1", key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("find state machine by idempotency key: %w", err)
	}
	return id, nil
}

// MachineUpdate implements driver.Tx.
func (t *txn) MachineUpdate(ctx context.Context, m *driver.Machine) error {
	_, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.StateMachines+" SET status = ?, current_state = ?, state = ?, completed_at = ?, "+
		"failed_at = ?, error_message = ?, updated_at = ? WHERE id = ?",
		string(m.Status), m.CurrentState, string(m.State), t.sec(m.CompletedAt), t.sec(m.FailedAt), nullStr(m.ErrorMessage),
		t.sec(m.UpdatedAt), m.ID)
	if err != nil {
		return fmt.Errorf("update state machine %d: %w", m.ID, err)
	}
	return nil
}

// MachineList implements driver.Tx.
func (t *txn) MachineList(ctx context.Context, f queuetytype.MachineFilter, withDefinition bool) ([]*driver.Machine, error) {
	cols := machineListCols
	if withDefinition {
		cols = machineCols
	}
	q := "SELECT " + cols + " FROM " + t.s.T.StateMachines + " WHERE 1=1"
	var args []any
	if f.Status != "" {
		q += " AND status = ?"
		args = append(args, string(f.Status))
	}
	if f.Name != "" {
		q += " AND name = ?"
		args = append(args, f.Name)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	rows, err := queryAll(ctx, t.tx, scanMachine(withDefinition), q+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list state machines: %w", err)
	}
	return rows, nil
}

// MachineEventInsert implements driver.Tx.
func (t *txn) MachineEventInsert(ctx context.Context, e *queuetytype.MachineEvent) error {
	q := "INSERT INTO " + t.s.T.StateMachineEvents + " (machine_id, job_id, state_name, handler, event, event_name, transition_name, " +
		"queue, attempt, input, output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at) VALUES (" +
		placeholders(19) + ")"
	ids, err := t.insert(ctx, q, 1, e.MachineID, nullID(e.JobID), e.StateName, nullStr(e.Handler), string(e.Event),
		nullStr(e.EventName), nullStr(e.TransitionName), nullStr(e.Queue), nullIntp(e.Attempt), nullText(e.Input), nullText(e.Output),
		nullText(e.StateBefore), nullText(e.StateAfter), nullText(e.Context), nullText(e.Artifacts), nullText(e.Chunks),
		nullText(e.Error), nullInt64p(e.DurationMS), t.sec(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert state machine event: %w", err)
	}
	e.ID = ids[0]
	return nil
}

// MachineEventList implements driver.Tx.
func (t *txn) MachineEventList(ctx context.Context, machineID int64, limit, offset int) ([]*queuetytype.MachineEvent, error) {
	q := "SELECT " + machineEventCols + " FROM " + t.s.T.StateMachineEvents + " WHERE machine_id = ? ORDER BY id"
	args := []any{machineID}
	if limit > 0 {
		q += " LIMIT ? OFFSET ?"
		args = append(args, limit, max(offset, 0))
	}
	rows, err := queryAll(ctx, t.tx, scanMachineEvent, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list state machine events: %w", err)
	}
	return rows, nil
}

// MachineEntryJob implements driver.Tx.
func (t *txn) MachineEntryJob(ctx context.Context, machineID int64) (int64, error) {
	var id sql.NullInt64
	err := t.tx.QueryRowContext(ctx, "SELECT job_id FROM "+t.s.T.StateMachineEvents+
		" WHERE machine_id = ? AND event = 'action_enqueued' ORDER BY id DESC LIMIT 1", machineID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read state machine %d entry job: %w", machineID, err)
	}
	return id.Int64, nil
}

// MachineStateAt implements driver.Tx.
func (t *txn) MachineStateAt(ctx context.Context, machineID, eventID int64) ([]byte, error) {
	var b []byte
	err := t.tx.QueryRowContext(ctx, "SELECT state_after FROM "+t.s.T.StateMachineEvents+
		" WHERE machine_id = ? AND id <= ? AND state_after IS NOT NULL ORDER BY id DESC LIMIT 1", machineID, eventID).Scan(nullBytes{&b})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state machine state at event %d: %w", eventID, err)
	}
	return b, nil
}

// MachineTimerSet implements driver.Tx.
func (t *txn) MachineTimerSet(ctx context.Context, m driver.MachineTimer) error {
	if err := t.MachineTimerClear(ctx, m.MachineID); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.MachineTimers+" (machine_id, state_name, entry_event_id, event, fire_at) VALUES (?, ?, ?, ?, ?)",
		m.MachineID, m.StateName, m.EntryEventID, m.Event, t.sec(m.FireAt))
	if err != nil {
		return fmt.Errorf("arm state machine timer: %w", err)
	}
	return nil
}

// MachineTimerClear implements driver.Tx.
func (t *txn) MachineTimerClear(ctx context.Context, machineID int64) error {
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.MachineTimers+" WHERE machine_id = ?", machineID); err != nil {
		return fmt.Errorf("clear state machine timer: %w", err)
	}
	return nil
}

// MachineTimerTake implements driver.Tx.
func (t *txn) MachineTimerTake(ctx context.Context, machineID, entryEventID int64) (bool, error) {
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.MachineTimers+" WHERE machine_id = ? AND entry_event_id = ?", machineID, entryEventID)
	if err != nil {
		return false, fmt.Errorf("take state machine timer: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take state machine timer: %w", err)
	}
	return n > 0, nil
}

// MachineTimersDue implements driver.Tx.
func (t *txn) MachineTimersDue(ctx context.Context, now time.Time, limit int) ([]driver.MachineTimer, error) {
	scan := func(sc scanner) (m driver.MachineTimer, err error) {
		err = sc.Scan(&m.MachineID, &m.StateName, &m.EntryEventID, &m.Event, nullTime{&m.FireAt})
		return m, err
	}
	rows, err := queryAll(ctx, t.tx, scan, "SELECT machine_id, state_name, entry_event_id, event, fire_at FROM "+t.s.T.MachineTimers+
		" WHERE fire_at <= ? ORDER BY fire_at, machine_id LIMIT ?", t.sec(now), limit)
	if err != nil {
		return nil, fmt.Errorf("find due state machine timers: %w", err)
	}
	return rows, nil
}
