// Package machine is the state machine runtime: the definition bundle as
// Queuety PHP writes it, dispatch, events, entry actions, guards, timeouts
// and the read views, each transition one store transaction that writes
// the rows Queuety PHP's StateMachine writes.
package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
)

// ActionJobHandler is the handler of a state's entry action job.
const ActionJobHandler = "__queuety_state_machine_action"

// handlerRef is a decoded action or guard: the name and its payload.
type handlerRef struct {
	class   string
	payload *phpjson.Object
}

// transition is one decoded transition.
type transition struct {
	event, target, name string
	guard               *handlerRef
}

// stateDef is one decoded state.
type stateDef struct {
	name         string
	action       *handlerRef
	terminal     queuetytype.MachineStatus
	transitions  []transition
	timeoutSecs  int64
	timeoutEvent string
}

// definition is a decoded definition bundle.
type definition struct {
	name, initial string
	states        map[string]*stateDef
	order         []string
	queue         string
	priority      queuetytype.Priority
	maxAttempts   int
	version, hash string
}

// Encode builds the definition bundle's JSON text and hash exactly as
// Queuety PHP's StateMachineBuilder::build_runtime_definition() does, after
// checking it. It returns the text with definition_hash set.
func Encode(d queuetytype.MachineDefinition) (text []byte, hash string, err error) {
	if err := Validate(d); err != nil {
		return nil, "", err
	}
	states := phpjson.NewObject()
	for _, s := range d.States {
		o := phpjson.NewObject()
		o.Set("name", s.Name)
		if s.Action != nil {
			o.Set("action", refObject(s.Action))
			o.Set("action_class", s.Action.Class)
		} else {
			o.Set("action", nil)
			o.Set("action_class", nil)
		}
		if s.Terminal != "" {
			o.Set("terminal_status", string(s.Terminal))
		} else {
			o.Set("terminal_status", nil)
		}
		ts := make([]any, 0, len(s.Transitions))
		for _, t := range s.Transitions {
			to := phpjson.NewObject()
			to.Set("event", t.Event)
			to.Set("target_state", t.Target)
			if t.Guard != nil {
				to.Set("guard", refObject(t.Guard))
				to.Set("guard_class", t.Guard.Class)
			} else {
				to.Set("guard", nil)
				to.Set("guard_class", nil)
			}
			name := t.Name
			if name == "" {
				name = t.Event
			}
			to.Set("name", name)
			ts = append(ts, to)
		}
		o.Set("transitions", ts)
		if s.Timeout != nil {
			tm := phpjson.NewObject()
			tm.Set("seconds", int64(math.Ceil(s.Timeout.After.Seconds())))
			tm.Set("event", s.Timeout.Event)
			o.Set("timeout", tm)
		}
		states.Set(s.Name, o)
	}
	def := phpjson.NewObject()
	def.Set("name", d.Name)
	initial := d.Initial
	if initial == "" {
		initial = d.States[0].Name
	}
	def.Set("initial_state", initial)
	def.Set("states", states)
	queue := d.Queue
	if queue == "" {
		queue = queuetytype.DefaultQueue
	}
	def.Set("queue", queue)
	def.Set("priority", int64(d.Priority))
	attempts := d.MaxAttempts
	if attempts == 0 {
		attempts = queuetytype.DefaultMaxAttempts
	}
	def.Set("max_attempts", int64(attempts))
	if d.Version != "" {
		def.Set("definition_version", d.Version)
	} else {
		def.Set("definition_version", nil)
	}
	body, err := phpjson.Marshal(def)
	if err != nil {
		return nil, "", fmt.Errorf("%w: state machine definition: %v", queuetytype.ErrInvalidArgument, err)
	}
	sum := sha256.Sum256(body)
	hash = hex.EncodeToString(sum[:])
	def.Set("definition_hash", hash)
	text, err = phpjson.Marshal(def)
	if err != nil {
		return nil, "", fmt.Errorf("state machine definition: %w", err)
	}
	return text, hash, nil
}

func refObject(r *queuetytype.MachineHandlerRef) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("class", r.Class)
	if len(r.Payload) == 0 {
		o.Set("payload", []any{})
	} else {
		o.Set("payload", phpjson.ObjectFromMap(r.Payload))
	}
	return o
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Validate checks a definition the way Queuety PHP's builder does, plus the
// Go engine's own limits (column widths, timeouts).
func Validate(d queuetytype.MachineDefinition) error {
	if strings.TrimSpace(d.Name) == "" || len(d.Name) > 255 {
		return invalid("state machine name must be 1 to 255 bytes")
	}
	if len(d.States) == 0 {
		return invalid("State machine must define at least one state.")
	}
	names := make(map[string]bool, len(d.States))
	for _, s := range d.States {
		if strings.TrimSpace(s.Name) == "" || len(s.Name) > 191 {
			return invalid("State machine state name must be 1 to 191 bytes.")
		}
		if names[s.Name] {
			return invalid("state %q is defined twice", s.Name)
		}
		names[s.Name] = true
	}
	initial := d.Initial
	if initial == "" {
		initial = d.States[0].Name
	}
	if !names[initial] {
		return invalid("State machine initial state is missing from the definition.")
	}
	for _, s := range d.States {
		if s.Terminal != "" && !s.Terminal.Terminal() {
			return invalid("State machine terminal states must resolve to a terminal status.")
		}
		if s.Terminal != "" && s.Action != nil {
			return invalid("State '%s' cannot be terminal and have an entry action.", s.Name)
		}
		if s.Action != nil && strings.TrimSpace(s.Action.Class) == "" {
			return invalid("State machine action class cannot be empty.")
		}
		for _, t := range s.Transitions {
			if strings.TrimSpace(t.Event) == "" || len(t.Event) > 191 {
				return invalid("State machine transition event must be 1 to 191 bytes.")
			}
			if !names[t.Target] {
				return invalid("State '%s' references missing transition target '%s'.", s.Name, t.Target)
			}
			if t.Guard != nil && strings.TrimSpace(t.Guard.Class) == "" {
				return invalid("State machine guard class cannot be empty.")
			}
		}
		if s.Timeout != nil {
			if s.Timeout.After < time.Second {
				return invalid("state %q: timeout must be at least one second", s.Name)
			}
			if s.Terminal != "" {
				return invalid("state %q: a terminal state cannot have a timeout", s.Name)
			}
			found := false
			for _, t := range s.Transitions {
				found = found || t.Event == s.Timeout.Event
			}
			if !found {
				return invalid("state %q: timeout event %q has no transition", s.Name, s.Timeout.Event)
			}
		}
	}
	if d.Queue != "" && (strings.TrimSpace(d.Queue) == "" || len(d.Queue) > 64) {
		return invalid("State machine queue must be 1 to 64 bytes.")
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > queuetytype.MaxAttemptsLimit {
		return invalid("State machine max_attempts must be at least 1.")
	}
	if d.Priority < queuetytype.PriorityLow || d.Priority > queuetytype.PriorityUrgent {
		return invalid("state machine priority %d is not one of Queuety's four", d.Priority)
	}
	if len(d.Version) > 64 {
		return invalid("state machine version must be at most 64 bytes")
	}
	if len(d.IdempotencyKey) > 191 {
		return invalid("state machine idempotency key must be at most 191 bytes")
	}
	return nil
}

// parse decodes a stored definition, accepting the forms Queuety PHP
// reads (an action or guard as a class string, action_class and guard_class
// alone, "config" for "payload").
func parse(text []byte) (*definition, error) {
	o, err := phpjson.DecodeObject(text)
	if err != nil {
		return nil, fmt.Errorf("decode state machine definition: %w", err)
	}
	d := &definition{states: map[string]*stateDef{}}
	d.name = str(o, "name")
	d.initial = str(o, "initial_state")
	d.queue = str(o, "queue")
	if d.queue == "" {
		d.queue = queuetytype.DefaultQueue
	}
	d.priority = queuetytype.Priority(num(o, "priority", 0))
	if d.priority < queuetytype.PriorityLow || d.priority > queuetytype.PriorityUrgent {
		d.priority = queuetytype.PriorityLow
	}
	d.maxAttempts = int(max(1, num(o, "max_attempts", 3)))
	d.version = str(o, "definition_version")
	d.hash = str(o, "definition_hash")
	states, _ := asObject(get(o, "states"))
	if states == nil {
		return d, nil
	}
	for _, name := range states.Keys() {
		so, _ := asObject(get(states, name))
		if so == nil {
			continue
		}
		s := &stateDef{name: name, action: handlerOf(get(so, "action"))}
		if s.action == nil {
			if c := strings.TrimSpace(str(so, "action_class")); c != "" {
				s.action = &handlerRef{class: c, payload: phpjson.NewObject()}
			}
		}
		if ts := strings.TrimSpace(str(so, "terminal_status")); ts != "" {
			s.terminal = queuetytype.MachineStatus(ts)
		}
		list, _ := get(so, "transitions").([]any)
		if lo, ok := asObject(get(so, "transitions")); ok && list == nil {
			for _, k := range lo.Keys() {
				list = append(list, get(lo, k))
			}
		}
		for _, raw := range list {
			to, ok := asObject(raw)
			if !ok {
				continue
			}
			t := transition{event: str(to, "event"), target: str(to, "target_state"), guard: handlerOf(get(to, "guard"))}
			if t.guard == nil {
				if c := strings.TrimSpace(str(to, "guard_class")); c != "" {
					t.guard = &handlerRef{class: c, payload: phpjson.NewObject()}
				}
			}
			if n, ok := get(to, "name").(string); ok {
				t.name = n
			} else {
				t.name = t.event
			}
			s.transitions = append(s.transitions, t)
		}
		if tm, ok := asObject(get(so, "timeout")); ok {
			s.timeoutSecs = num(tm, "seconds", 0)
			s.timeoutEvent = str(tm, "event")
		}
		d.states[name] = s
		d.order = append(d.order, name)
	}
	return d, nil
}

// status is the status a machine has on entering s (Queuety PHP's
// status_for_entered_state).
func (s *stateDef) status() queuetytype.MachineStatus {
	if s.terminal != "" {
		return s.terminal
	}
	if s.action != nil {
		return queuetytype.MachineRunning
	}
	return queuetytype.MachineWaitingEvent
}

// events are the distinct events s accepts, in definition order.
func (s *stateDef) events() []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range s.transitions {
		if !seen[t.event] {
			seen[t.event] = true
			out = append(out, t.event)
		}
	}
	return out
}

func handlerOf(v any) *handlerRef {
	if s, ok := v.(string); ok {
		if c := strings.TrimSpace(s); c != "" {
			return &handlerRef{class: c, payload: phpjson.NewObject()}
		}
		return nil
	}
	o, ok := asObject(v)
	if !ok {
		return nil
	}
	c := strings.TrimSpace(str(o, "class"))
	if c == "" {
		return nil
	}
	p := get(o, "payload")
	if p == nil {
		p = get(o, "config")
	}
	po, _ := asObject(p)
	if po == nil {
		po = phpjson.NewObject()
	}
	return &handlerRef{class: c, payload: po}
}

func get(o *phpjson.Object, k string) any {
	if o == nil {
		return nil
	}
	v, _ := o.Get(k)
	return v
}

// asObject reads an object, or a list as PHP would key it.
func asObject(v any) (*phpjson.Object, bool) {
	switch x := v.(type) {
	case *phpjson.Object:
		return x, x != nil
	case []any:
		o := phpjson.NewObject()
		for i, e := range x {
			o.Set(fmt.Sprint(i), e)
		}
		return o, true
	}
	return nil, false
}

func str(o *phpjson.Object, k string) string {
	switch x := get(o, k).(type) {
	case string:
		return x
	case int64:
		return fmt.Sprint(x)
	}
	return ""
}

func num(o *phpjson.Object, k string, def int64) int64 {
	switch x := get(o, k).(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return def
}
