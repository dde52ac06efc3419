package machine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Status reads one machine's status (Queuety PHP's get_status).
func (r *Runtime) Status(ctx context.Context, id int64) (*queuetytype.MachineState, error) {
	var out *queuetytype.MachineState
	err := r.Store.InTx(ctx, func(tx driver.Tx) error {
		m, err := tx.MachineGet(ctx, id, driver.LockNone)
		if err != nil {
			return err
		}
		def, err := parse(m.Definition)
		if err != nil {
			return err
		}
		out = &queuetytype.MachineState{ID: m.ID, Name: m.Name, Status: m.Status, CurrentState: m.CurrentState,
			State: decodeState(m.State).ToMap(), AvailableEvents: []string{}, DefinitionVersion: m.DefinitionVersion,
			DefinitionHash: m.DefinitionHash, IdempotencyKey: m.IdempotencyKey, ErrorMessage: m.ErrorMessage}
		if sd := def.states[m.CurrentState]; sd != nil {
			out.AvailableEvents = sd.events()
			if sd.action != nil {
				out.CurrentAction = sd.action.class
			}
			out.TerminalStatus = sd.terminal
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: state machine %d status: %w", id, err)
	}
	return out, nil
}

// List lists machines newest first, each with its available events.
func (r *Runtime) List(ctx context.Context, f queuetytype.MachineFilter) ([]*queuetytype.MachineSummary, error) {
	var rows []*driver.Machine
	err := r.Store.InTx(ctx, func(tx driver.Tx) (err error) { rows, err = tx.MachineList(ctx, f, true); return err })
	if err != nil {
		return nil, fmt.Errorf("queuety: list state machines: %w", err)
	}
	out := make([]*queuetytype.MachineSummary, 0, len(rows))
	for _, m := range rows {
		out = append(out, Summarize(m))
	}
	return out, nil
}

// Summarize is a machine row as lists show it: without its state, with
// the events its current state accepts (read from its definition).
func Summarize(m *driver.Machine) *queuetytype.MachineSummary {
	s := &queuetytype.MachineSummary{ID: m.ID, Name: m.Name, Status: m.Status, CurrentState: m.CurrentState,
		DefinitionVersion: m.DefinitionVersion, DefinitionHash: m.DefinitionHash, IdempotencyKey: m.IdempotencyKey,
		StartedAt: m.StartedAt, UpdatedAt: m.UpdatedAt, CompletedAt: m.CompletedAt, FailedAt: m.FailedAt, AvailableEvents: []string{}}
	if def, err := parse(m.Definition); err == nil {
		if sd := def.states[m.CurrentState]; sd != nil {
			s.AvailableEvents = sd.events()
		}
	}
	return s
}

// Timeline lists a machine's events in id order; limit 0 reads them all.
func (r *Runtime) Timeline(ctx context.Context, id int64, limit, offset int) ([]*queuetytype.MachineEvent, error) {
	var out []*queuetytype.MachineEvent
	err := r.Store.InTx(ctx, func(tx driver.Tx) (err error) {
		if _, err := tx.MachineGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		out, err = tx.MachineEventList(ctx, id, limit, offset)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: state machine %d timeline: %w", id, err)
	}
	return out, nil
}

// StateAt returns the public state after event eventID (the last event at
// or before it that recorded one); ErrNotFound when there is none.
func (r *Runtime) StateAt(ctx context.Context, id, eventID int64) (map[string]any, error) {
	var b []byte
	err := r.Store.InTx(ctx, func(tx driver.Tx) (err error) { b, err = tx.MachineStateAt(ctx, id, eventID); return err })
	if err == nil && b == nil {
		err = fmt.Errorf("no state recorded at or before event %d: %w", eventID, queuetytype.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("queuety: state machine %d state at event %d: %w", id, eventID, err)
	}
	return decodeState(b).ToMap(), nil
}

// grouped are the event types that make a state's latest event in a trace.
var grouped = map[queuetytype.MachineEventType]bool{
	queuetytype.MachineEventActionCompleted: true, queuetytype.MachineEventActionFailed: true, queuetytype.MachineEventGuardCompleted: true,
	queuetytype.MachineEventGuardFailed: true, queuetytype.MachineEventTransitioned: true, queuetytype.MachineEventRejected: true,
	queuetytype.MachineEventWaiting: true, queuetytype.MachineEventCompleted: true, queuetytype.MachineEventFailed: true,
	queuetytype.MachineEventCancelled: true,
}

// EventJSON is one event as the trace and the CLI show it: its columns,
// JSON ones decoded, and error_message.
func EventJSON(e *queuetytype.MachineEvent) *phpjson.Object {
	o := obj("id", e.ID, "machine_id", e.MachineID, "job_id", nullID(e.JobID), "state_name", e.StateName, "handler", nullable(e.Handler),
		"event", string(e.Event), "event_name", nullable(e.EventName), "transition_name", nullable(e.TransitionName),
		"queue", nullable(e.Queue))
	if e.Attempt != nil {
		o.Set("attempt", int64(*e.Attempt))
	} else {
		o.Set("attempt", nil)
	}
	for _, c := range []struct {
		k string
		b []byte
	}{{"input", e.Input}, {"output", e.Output}, {"state_before", e.StateBefore}, {"state_after", e.StateAfter}, {"context", e.Context},
		{"artifacts", e.Artifacts}, {"chunks", e.Chunks}, {"error", e.Error}} {
		o.Set(c.k, decodeAny(c.b))
	}
	if e.DurationMS != nil {
		o.Set("duration_ms", *e.DurationMS)
	} else {
		o.Set("duration_ms", nil)
	}
	o.Set("created_at", e.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
	var msg any
	if eo, ok := decodeAny(e.Error).(*phpjson.Object); ok {
		msg, _ = eo.Get("message")
	}
	o.Set("error_message", msg)
	return o
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func decodeAny(b []byte) any {
	if b == nil {
		return nil
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return string(b)
	}
	return v
}

// TraceEvents bounds the events of a trace bundle (its first ones); the
// timeline pages reach the rest.
const TraceEvents = 5000

// Trace returns the machine's trace bundle as JSON (Queuety PHP's
// get_trace): the machine, its events grouped by state, the events (the
// first TraceEvents), the action jobs and their logs (1,000 per job),
// artifact and chunk references.
func (r *Runtime) Trace(ctx context.Context, id int64) ([]byte, error) {
	var (
		m      *driver.Machine
		events []*queuetytype.MachineEvent
		jobs   []*driver.Job
		logs   []*driver.LogEntry
	)
	err := r.Store.InTx(ctx, func(tx driver.Tx) (err error) {
		if m, err = tx.MachineGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		if events, err = tx.MachineEventList(ctx, id, TraceEvents, 0); err != nil {
			return err
		}
		var ids []int64
		seen := map[int64]bool{}
		for _, e := range events {
			if e.JobID > 0 && !seen[e.JobID] {
				seen[e.JobID] = true
				ids = append(ids, e.JobID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if jobs, err = tx.JobGetMany(ctx, ids, driver.LockNone); err != nil {
			return err
		}
		for _, jid := range ids {
			l, err := tx.LogList(ctx, queuetytype.LogFilter{JobID: jid, Limit: 1000})
			if err != nil {
				return err
			}
			logs = append(logs, l...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: state machine %d trace: %w", id, err)
	}
	machine := obj("id", m.ID, "name", m.Name, "status", string(m.Status), "current_state", m.CurrentState,
		"state", decodeState(m.State), "definition", decodeAny(m.Definition), "definition_hash", nullable(m.DefinitionHash),
		"definition_version", nullable(m.DefinitionVersion), "idempotency_key", nullable(m.IdempotencyKey),
		"started_at", timeText(m.StartedAt), "updated_at", timeText(m.UpdatedAt), "completed_at", timeText(m.CompletedAt),
		"failed_at", timeText(m.FailedAt), "error_message", nullable(m.ErrorMessage))
	evs := make([]any, 0, len(events))
	states := phpjson.NewObject()
	artifacts, chunks := []any{}, []any{}
	for _, e := range events {
		ej := EventJSON(e)
		evs = append(evs, ej)
		g, ok := states.Get(e.StateName)
		if !ok {
			g = obj("state_name", e.StateName, "events", []any{})
			states.Set(e.StateName, g)
		}
		gs := g.(*phpjson.Object)
		list, _ := gs.Get("events")
		gs.Set("events", append(list.([]any), ej))
		if grouped[e.Event] {
			gs.Set("latest", ej)
		}
		if l, ok := decodeAny(e.Artifacts).([]any); ok {
			artifacts = append(artifacts, l...)
		}
		if l, ok := decodeAny(e.Chunks).([]any); ok {
			chunks = append(chunks, l...)
		}
	}
	stateList := make([]any, 0, states.Len())
	for _, k := range states.Keys() {
		v, _ := states.Get(k)
		stateList = append(stateList, v)
	}
	jobList := make([]any, 0, len(jobs))
	for _, j := range jobs {
		jobList = append(jobList, obj("id", j.ID, "queue", j.Queue, "handler", j.Handler, "payload", decodeAny(j.Payload),
			"status", string(j.Status), "attempts", int64(j.Attempts), "max_attempts", int64(j.MaxAttempts),
			"error_message", nullable(j.ErrorMessage)))
	}
	logList := make([]any, 0, len(logs))
	for _, l := range logs {
		b, _ := json.Marshal(l)
		logList = append(logList, decodeAny(b))
	}
	return phpjson.Marshal(obj("machine", machine, "states", stateList, "events", evs, "jobs", jobList, "logs", logList,
		"artifacts", artifacts, "chunks", chunks))
}

func timeText(t interface{ IsZero() bool }) any {
	if t.IsZero() {
		return nil
	}
	if tt, ok := t.(interface{ Format(string) string }); ok {
		return tt.Format("2006-01-02 15:04:05")
	}
	return nil
}
