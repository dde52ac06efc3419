package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// GuardFunc decides whether a transition may be taken.
type GuardFunc func(ctx context.Context, in queuetytype.MachineInput) (bool, error)

// ActionFunc runs a state's entry action and returns the keys to merge
// into the machine's state; "_event" (and "_event_payload") emit an event.
type ActionFunc func(ctx context.Context, in queuetytype.MachineInput) (map[string]any, error)

// Handlers finds guards and actions by name; either func may be nil.
type Handlers struct {
	Guard  func(name string) (GuardFunc, bool)
	Action func(name string) (ActionFunc, bool)
}

func (h Handlers) guard(name string) (GuardFunc, bool) {
	if h.Guard == nil {
		return nil, false
	}
	return h.Guard(name)
}

func (h Handlers) action(name string) (ActionFunc, bool) {
	if h.Action == nil {
		return nil, false
	}
	return h.Action(name)
}

// Or returns handlers that look in h first, then in other.
func (h Handlers) Or(other Handlers) Handlers {
	return Handlers{
		Guard: func(name string) (GuardFunc, bool) {
			if fn, ok := h.guard(name); ok {
				return fn, true
			}
			return other.guard(name)
		},
		Action: func(name string) (ActionFunc, bool) {
			if fn, ok := h.action(name); ok {
				return fn, true
			}
			return other.action(name)
		},
	}
}

// Runtime runs state machine transitions on a store.
type Runtime struct {
	Store driver.Store
	Now   func() time.Time
	// ActionResources, when set, returns the concurrency group, limit and
	// cost units of the entry action named class, written on the rows of
	// its action jobs (Queuety PHP takes them from the action class's
	// handler metadata).
	ActionResources func(class string) (queuetytype.JobResources, error)
}

func (r *Runtime) now() time.Time { return r.Now().UTC().Truncate(time.Second) }

// object turns a caller's value into an ordered object (nil: empty).
func object(v any, what string) (*phpjson.Object, error) {
	if v == nil {
		return phpjson.NewObject(), nil
	}
	n, err := phpjson.Normalize(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", queuetytype.ErrInvalidArgument, what, err)
	}
	switch x := n.(type) {
	case *phpjson.Object:
		return x.Clone(), nil
	case []any:
		o, _ := asObject(x)
		return o, nil
	}
	return nil, fmt.Errorf("%w: %s must be an object, got %T", queuetytype.ErrInvalidArgument, what, v)
}

// publicKey reports whether PHP merges key into the public state: a
// string key (not an integer one) that does not start with "_".
func publicKey(k string) bool {
	if strings.HasPrefix(k, "_") {
		return false
	}
	_, isInt := phpjson.IntKey(k)
	return !isInt
}

func decodeState(b []byte) *phpjson.Object {
	o, err := phpjson.DecodeObject(b)
	if err != nil || o == nil {
		return phpjson.NewObject()
	}
	return o
}

func encode(v any) []byte {
	b, err := phpjson.Marshal(v)
	if err != nil {
		return []byte("[]")
	}
	return b
}

// Dispatch creates a machine from d with the initial public state and
// returns its id; with an idempotency key already used it returns the
// existing machine's id.
func (r *Runtime) Dispatch(ctx context.Context, d queuetytype.MachineDefinition, initial any) (int64, error) {
	key := strings.TrimSpace(d.IdempotencyKey)
	if d.IdempotencyKey != "" && key == "" {
		return 0, invalid("State machine idempotency_key cannot be empty.")
	}
	d.IdempotencyKey = key
	text, _, err := Encode(d)
	if err != nil {
		return 0, err
	}
	st, err := object(initial, "initial state")
	if err != nil {
		return 0, err
	}
	def, err := parse(text)
	if err != nil {
		return 0, err
	}
	var id int64
	err = r.Store.InTx(ctx, func(tx driver.Tx) error {
		id = 0
		if key != "" {
			found, err := tx.MachineIDByKey(ctx, key)
			if err != nil || found != 0 {
				id = found
				return err
			}
		}
		id, err = r.insert(ctx, tx, def, text, st, key)
		return err
	})
	if errors.Is(err, driver.ErrDuplicate) && key != "" {
		err = r.Store.InTx(ctx, func(tx driver.Tx) (err error) { id, err = tx.MachineIDByKey(ctx, key); return err })
	}
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch state machine %q: %w", d.Name, err)
	}
	return id, nil
}

func (r *Runtime) insert(ctx context.Context, tx driver.Tx, def *definition, text []byte, st *phpjson.Object, key string) (int64, error) {
	at := r.now()
	sd := def.states[def.initial]
	status := sd.status()
	m := &driver.Machine{Name: def.name, Status: status, CurrentState: def.initial, State: encode(st), Definition: text,
		DefinitionHash: def.hash, DefinitionVersion: def.version, IdempotencyKey: key, StartedAt: at, UpdatedAt: at}
	setEnded(m, status, at)
	if err := tx.MachineInsert(ctx, m); err != nil {
		return 0, err
	}
	statusObj := obj("status", string(status))
	if _, err := insert(ctx, tx, m.ID, at, row{state: def.initial, event: string(queuetytype.MachineEventStarted), input: st,
		output: statusObj, stateAfter: st, context: obj("name", def.name, "initial_state", def.initial, "definition_hash", nullable(def.hash))}); err != nil {
		return 0, err
	}
	if err := r.entered(ctx, tx, at, m, def, sd, "", phpjson.NewObject(), st, statusObj); err != nil {
		return 0, err
	}
	return m.ID, nil
}

// setEnded sets completed_at and failed_at for a machine entering status.
func setEnded(m *driver.Machine, status queuetytype.MachineStatus, at time.Time) {
	m.CompletedAt, m.FailedAt = time.Time{}, time.Time{}
	switch status {
	case queuetytype.MachineCompleted, queuetytype.MachineCancelled:
		m.CompletedAt = at
	case queuetytype.MachineFailed:
		m.FailedAt = at
	}
}

// entered writes what follows entering sd: the action job, or the
// lifecycle row (with lifecycleOut as its input and output) and the
// state's timer.
func (r *Runtime) entered(ctx context.Context, tx driver.Tx, at time.Time, m *driver.Machine, def *definition, sd *stateDef,
	eventName string, eventPayload, st *phpjson.Object, lifecycleOut any) error {
	status := sd.status()
	if status == queuetytype.MachineRunning {
		return r.enqueue(ctx, tx, at, m.ID, def, sd, eventName, eventPayload, st)
	}
	evID, err := insert(ctx, tx, m.ID, at, lifecycle(sd.name, lifecycleEvent(status), eventName, st, lifecycleOut))
	if err != nil {
		return err
	}
	if status == queuetytype.MachineWaitingEvent && sd.timeoutSecs > 0 && sd.timeoutEvent != "" {
		return tx.MachineTimerSet(ctx, driver.MachineTimer{MachineID: m.ID, StateName: sd.name, EntryEventID: evID,
			Event: sd.timeoutEvent, FireAt: at.Add(time.Duration(sd.timeoutSecs) * time.Second)})
	}
	return nil
}

// enqueue queues sd's entry action job (Queuety PHP's enqueue_state_action).
func (r *Runtime) enqueue(ctx context.Context, tx driver.Tx, at time.Time, id int64, def *definition, sd *stateDef,
	eventName string, eventPayload, st *phpjson.Object) error {
	if sd.action == nil {
		return nil
	}
	payload := obj("machine_id", id, "state_name", sd.name, "event_name", nullable(eventName), "event_payload", eventPayload)
	job := &driver.Job{Queue: def.queue, Handler: ActionJobHandler, Payload: encode(payload), Priority: def.priority,
		Status: queuetytype.JobPending, MaxAttempts: def.maxAttempts, AvailableAt: at, CostUnits: 1, CreatedAt: at}
	if r.ActionResources != nil {
		res, err := r.ActionResources(sd.action.class)
		if err != nil {
			return fmt.Errorf("state action %q job options: %w", sd.action.class, err)
		}
		job.ConcurrencyGroup, job.ConcurrencyLimit = strings.TrimSpace(res.ConcurrencyGroup), res.ConcurrencyLimit
		if res.CostUnitsSet {
			job.CostUnits = res.CostUnits
		}
	}
	if err := tx.JobInsert(ctx, []*driver.Job{job}); err != nil {
		return fmt.Errorf("enqueue state action: %w", err)
	}
	out := obj("job_id", job.ID, "handler", sd.action.class, "queue", def.queue, "priority", int64(def.priority))
	_, err := insert(ctx, tx, id, at, row{state: sd.name, event: string(queuetytype.MachineEventActionEnqueued), eventName: eventName,
		jobID: job.ID, handler: sd.action.class, queue: def.queue,
		input:  obj("state", st, "event", nullable(eventName), "event_payload", eventPayload, "payload", sd.action.payload),
		output: out, stateBefore: st, stateAfter: st, context: obj("state", sd.name, "event", nullable(eventName))})
	return err
}

// locked is a machine read under its row lock.
type locked struct {
	m   *driver.Machine
	def *definition
	sd  *stateDef
	st  *phpjson.Object
}

func (r *Runtime) lock(ctx context.Context, tx driver.Tx, id int64, mode driver.LockMode) (*locked, error) {
	m, err := tx.MachineGet(ctx, id, mode)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("State machine %d not found: %w", id, queuetytype.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	def, err := parse(m.Definition)
	if err != nil {
		return nil, err
	}
	sd := def.states[m.CurrentState]
	if sd == nil {
		return nil, fmt.Errorf("%w: State machine %d is missing persisted state definition '%s'.", queuetytype.ErrInvalidState, id, m.CurrentState)
	}
	return &locked{m: m, def: def, sd: sd, st: decodeState(m.State)}, nil
}

// transition applies event from l's current state with the public state
// st (Queuety PHP's apply_transition_from_locked_context). rej is the
// rejection (a rule or a guard's error); err a store error.
func (r *Runtime) transition(ctx context.Context, tx driver.Tx, at time.Time, l *locked, st *phpjson.Object, event string,
	payload *phpjson.Object, h Handlers) (rej, err error) {
	cur := l.m.CurrentState
	var chosen *transition
	for i := range l.sd.transitions {
		t := &l.sd.transitions[i]
		if t.event != event {
			continue
		}
		if t.guard != nil {
			allowed, rej, err := r.runGuard(ctx, tx, at, l, t, st, event, payload, h)
			if rej != nil || err != nil {
				return rej, err
			}
			if !allowed {
				continue
			}
		}
		chosen = t
		break
	}
	if chosen == nil {
		return rule("State '%s' does not allow event '%s'.", cur, event), nil
	}
	target := l.def.states[chosen.target]
	if target == nil {
		return rule("State machine target state '%s' is missing from the definition.", chosen.target), nil
	}
	if _, err := insert(ctx, tx, l.m.ID, at, row{state: cur, event: string(queuetytype.MachineEventTransitioned), eventName: event,
		transitionName: chosen.name, input: payload,
		output:      obj("from", cur, "to", chosen.target, "name", chosen.name, "event", event),
		stateBefore: st, stateAfter: st, context: obj("from", cur, "to", chosen.target)}); err != nil {
		return nil, err
	}
	status := target.status()
	l.m.Status, l.m.CurrentState, l.m.State, l.m.ErrorMessage, l.m.UpdatedAt = status, target.name, encode(st), "", at
	setEnded(l.m, status, at)
	if err := tx.MachineUpdate(ctx, l.m); err != nil {
		return nil, err
	}
	if err := tx.MachineTimerClear(ctx, l.m.ID); err != nil {
		return nil, err
	}
	return nil, r.entered(ctx, tx, at, l.m, l.def, target, event, payload, st, payload)
}

func (r *Runtime) runGuard(ctx context.Context, tx driver.Tx, at time.Time, l *locked, t *transition, st *phpjson.Object,
	event string, payload *phpjson.Object, h Handlers) (allowed bool, rej, err error) {
	fn, ok := h.guard(t.guard.class)
	if !ok {
		return false, rule("State guard class '%s' could not be loaded.", t.guard.class), nil
	}
	cur := l.m.CurrentState
	input := obj("state", st, "event", event, "event_payload", payload, "payload", t.guard.payload)
	gctx := obj("from", cur, "to", t.target, "event", event)
	if _, err := insert(ctx, tx, l.m.ID, at, row{state: cur, event: string(queuetytype.MachineEventGuardStarted), eventName: event,
		handler: t.guard.class, transitionName: t.name, input: input, output: payload, stateBefore: st, stateAfter: st, context: gctx}); err != nil {
		return false, nil, err
	}
	started := time.Now()
	allowed, gerr := safeGuard(ctx, fn, queuetytype.MachineInput{MachineID: l.m.ID, StateName: cur, State: st.ToMap(), Event: event,
		EventPayload: payload.ToMap(), Payload: t.guard.payload.ToMap()})
	ms := time.Since(started).Milliseconds()
	if gerr != nil {
		_, err := insert(ctx, tx, l.m.ID, at, row{state: cur, event: string(queuetytype.MachineEventGuardFailed), eventName: event,
			handler: t.guard.class, transitionName: t.name, input: input, stateBefore: st, stateAfter: st, context: gctx,
			errv: errorPayload(gerr), durationMS: &ms})
		return false, gerr, err
	}
	_, err = insert(ctx, tx, l.m.ID, at, row{state: cur, event: string(queuetytype.MachineEventGuardCompleted), eventName: event,
		handler: t.guard.class, transitionName: t.name, input: input, output: obj("allowed", allowed), stateBefore: st, stateAfter: st,
		context: gctx, durationMS: &ms})
	return allowed, nil, err
}

func safeGuard(ctx context.Context, fn GuardFunc, in queuetytype.MachineInput) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("guard panicked: %v", p)
		}
	}()
	return fn(ctx, in)
}

func safeAction(ctx context.Context, fn ActionFunc, in queuetytype.MachineInput) (out map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("action panicked: %v", p)
		}
	}()
	return fn(ctx, in)
}

// Send delivers an external event (Queuety PHP's send_event). A rejected
// event is recorded (event_rejected) and returned as ErrEventRejected.
func (r *Runtime) Send(ctx context.Context, id int64, event string, payload any, h Handlers) error {
	event = strings.TrimSpace(event)
	if event == "" {
		return invalid("State machine event name cannot be empty.")
	}
	p, err := object(payload, "event payload")
	if err != nil {
		return err
	}
	return r.deliver(ctx, id, event, p, h, nil)
}

// deliver runs one event in one transaction; timer, when set, must still
// be armed for the event to apply (a timeout).
func (r *Runtime) deliver(ctx context.Context, id int64, event string, p *phpjson.Object, h Handlers, timer *driver.MachineTimer) error {
	var rejected error
	err := r.Store.InTx(ctx, func(tx driver.Tx) error {
		rejected = nil
		at := r.now()
		l, err := r.lock(ctx, tx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		evCtx := obj("event", event)
		if timer != nil {
			taken, err := tx.MachineTimerTake(ctx, id, timer.EntryEventID)
			if err != nil || !taken || l.m.Status != queuetytype.MachineWaitingEvent || l.m.CurrentState != timer.StateName {
				rejected = errTimerGone
				return err
			}
			evCtx.Set("timeout", true)
		}
		before := l.st
		var rej error
		if l.m.Status != queuetytype.MachineWaitingEvent {
			rej = rule("State machine %d is not waiting for external events; current status is '%s'.", id, l.m.Status)
		} else {
			st := before.Clone()
			for _, k := range p.Keys() {
				if publicKey(k) {
					v, _ := p.Get(k)
					st.Set(k, v)
				}
			}
			if _, err := insert(ctx, tx, id, at, row{state: l.m.CurrentState, event: string(queuetytype.MachineEventReceived), eventName: event,
				input: p, output: p, stateBefore: before, stateAfter: st, context: evCtx}); err != nil {
				return err
			}
			rej, err = r.transition(ctx, tx, at, l, st, event, p, h)
			if err != nil {
				return err
			}
		}
		if rej == nil {
			return nil
		}
		rejected = rej
		msg := rej.Error()
		_, err = insert(ctx, tx, id, at, row{state: l.m.CurrentState, event: string(queuetytype.MachineEventRejected), eventName: event,
			input: p, output: obj("rejected", true, "message", msg), stateBefore: before, stateAfter: before, context: evCtx,
			errv: errorPayload(rej)})
		return err
	})
	if err != nil {
		return fmt.Errorf("queuety: state machine %d event %q: %w", id, event, err)
	}
	if rejected == errTimerGone {
		return rejected
	}
	if rejected != nil {
		return fmt.Errorf("queuety: state machine %d event %q: %w: %w", id, event, queuetytype.ErrEventRejected, rejected)
	}
	return nil
}

// errTimerGone reports a due timer another sweeper took, or one the
// machine left behind (it moved on, or is running an action).
var errTimerGone = errors.New("state machine timer no longer armed")

// SweepTimeouts fires up to limit due state timeouts and returns how many
// it fired. Each is one transaction under the machine's row lock, so a
// timeout fires once however many workers sweep.
func (r *Runtime) SweepTimeouts(ctx context.Context, limit int, h Handlers) (int, error) {
	var due []driver.MachineTimer
	err := r.Store.InTx(ctx, func(tx driver.Tx) (err error) {
		due, err = tx.MachineTimersDue(ctx, r.Now(), limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: find due state machine timeouts: %w", err)
	}
	fired := 0
	for i := range due {
		err := r.deliver(ctx, due[i].MachineID, due[i].Event, phpjson.NewObject(), h, &due[i])
		switch {
		case err == nil:
			fired++
		case errors.Is(err, errTimerGone):
		case errors.Is(err, queuetytype.ErrEventRejected):
			fired++ // recorded on the timeline
		case errors.Is(err, queuetytype.ErrNotFound):
			_ = r.Store.InTx(ctx, func(tx driver.Tx) error { return tx.MachineTimerClear(ctx, due[i].MachineID) })
		default:
			return fired, err
		}
	}
	return fired, nil
}
