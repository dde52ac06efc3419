package machine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// none marks a JSON column left NULL.
type none struct{}

// row is one state_machine_events row before encoding: the JSON columns
// hold values (nil is JSON null, none{} or an unset field is SQL NULL).
type row struct {
	state, event, eventName, handler, transitionName, queue string
	jobID                                                   int64
	attempt                                                 *int
	input, output, stateBefore, stateAfter, context, errv   any
	durationMS                                              *int64
}

// obj builds an ordered object from key, value pairs.
func obj(kv ...any) *phpjson.Object {
	o := phpjson.NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// nullable is a string that PHP writes as null when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func encodeCol(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if _, ok := v.(none); ok {
		return nil, nil
	}
	b, err := phpjson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode state machine event column: %w", err)
	}
	return b, nil
}

// insert writes r for machine id.
func insert(ctx context.Context, tx driver.Tx, id int64, at time.Time, r row) (int64, error) {
	e := &queuetytype.MachineEvent{MachineID: id, JobID: r.jobID, StateName: r.state, Handler: r.handler,
		Event: queuetytype.MachineEventType(r.event), EventName: r.eventName, TransitionName: r.transitionName, Queue: r.queue,
		Attempt: r.attempt, DurationMS: r.durationMS, CreatedAt: at}
	cols := []struct {
		dst *[]byte
		v   any
	}{{&e.Input, r.input}, {&e.Output, r.output}, {&e.StateBefore, r.stateBefore}, {&e.StateAfter, r.stateAfter},
		{&e.Context, r.context}, {&e.Error, r.errv}}
	for _, c := range cols {
		b, err := encodeCol(c.v)
		if err != nil {
			return 0, err
		}
		*c.dst = b
	}
	if err := tx.MachineEventInsert(ctx, e); err != nil {
		return 0, err
	}
	return e.ID, nil
}

// lifecycle is a lifecycle row (Queuety PHP's record_lifecycle_state_event).
func lifecycle(state, event, eventName string, st *phpjson.Object, output any) row {
	return row{state: state, event: event, eventName: eventName, input: output, output: output, stateBefore: st, stateAfter: st,
		context: obj("state", state, "event", nullable(eventName))}
}

// lifecycleEvent is the lifecycle row type for a status.
func lifecycleEvent(s queuetytype.MachineStatus) string {
	switch s {
	case queuetytype.MachineWaitingEvent:
		return string(queuetytype.MachineEventWaiting)
	case queuetytype.MachineCompleted:
		return string(queuetytype.MachineEventCompleted)
	case queuetytype.MachineFailed:
		return string(queuetytype.MachineEventFailed)
	case queuetytype.MachineCancelled:
		return string(queuetytype.MachineEventCancelled)
	}
	return ""
}

// errorPayload is Queuety PHP's error_payload for err.
func errorPayload(err error) *phpjson.Object {
	class := fmt.Sprintf("%T", err)
	if _, ok := err.(*ruleError); ok {
		class = "RuntimeException"
	}
	return obj("message", err.Error(), "class", class, "trace", "")
}

// ruleError is a rejection by the machine's rules (Queuety PHP's
// RuntimeException), as opposed to a handler's error.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

func rule(format string, args ...any) error { return &ruleError{msg: fmt.Sprintf(format, args...)} }
