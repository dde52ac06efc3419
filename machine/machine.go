// Package machine builds durable, event-driven state machines: Queuety
// PHP's Queuety::machine() builder.
//
// A workflow answers "what work runs next?"; a state machine answers "what
// state is this thing in, and which events are valid from here?". Define
// the states, the events each accepts (optionally guarded), the entry
// actions that run as jobs, and the terminal states, then Dispatch:
//
//	id, err := machine.New("agent_session").
//		Version("agent-session.v1").
//		State("awaiting_user").On("user_message", "planning").
//		State("planning").Action("plan_session").On("planned", "awaiting_review").
//		State("awaiting_review").
//		On("approve", "completed", machine.Guard("review_approved", nil)).
//		On("reject", "awaiting_user").
//		Terminal("completed", queuetytype.MachineCompleted).
//		Dispatch(ctx, client, queuety.State{"thread_id": 42})
//
// Events are sent with queuety.Client.MachineEvent; actions and guards are
// registered with queuety.Registry.HandleMachineAction and
// HandleMachineGuard. The rows are Queuety PHP's (state_machines and
// state_machine_events), so either runtime can drive a machine the other
// defined.
package machine

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	imachine "github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Builder collects a machine definition. Create one with New; each method
// returns the Builder for chaining. The first mistake is kept and returned
// by Definition and Dispatch.
type Builder struct {
	def     queuetytype.MachineDefinition
	current int // index of the state being configured, -1 before State
	err     error
}

// New starts a definition for a machine called name (the state_machines
// name column). The defaults are Queuety's: entry actions on queue
// "default", queuetytype.PriorityLow, 3 attempts.
func New(name string) *Builder {
	return &Builder{def: queuetytype.MachineDefinition{Name: name}, current: -1}
}

func (b *Builder) fail(format string, args ...any) *Builder {
	if b.err == nil {
		b.err = fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	return b
}

// setText sets *field to s with its surrounding space trimmed, or fails b
// with msg when nothing is left.
func (b *Builder) setText(field *string, s, msg string) *Builder {
	if s = strings.TrimSpace(s); s == "" {
		return b.fail("%s", msg)
	}
	*field = s
	return b
}

// Initial sets the initial state (default: the first state defined).
func (b *Builder) Initial(state string) *Builder {
	return b.setText(&b.def.Initial, state, "State machine initial state cannot be empty.")
}

// State starts (or returns to) configuring a state; Action, On and
// Timeout apply to it.
func (b *Builder) State(name string) *Builder {
	name = strings.TrimSpace(name)
	if name == "" {
		return b.fail("State machine state name cannot be empty.")
	}
	for i, s := range b.def.States {
		if s.Name == name {
			b.current = i
			return b
		}
	}
	b.def.States = append(b.def.States, queuetytype.MachineStateDef{Name: name})
	b.current = len(b.def.States) - 1
	return b
}

// Terminal starts configuring a terminal state: entering it ends the
// machine with status (MachineCompleted, MachineFailed or
// MachineCancelled).
func (b *Builder) Terminal(name string, status queuetytype.MachineStatus) *Builder {
	if !status.Terminal() {
		return b.fail("State machine terminal states must resolve to a terminal status.")
	}
	b.State(name)
	if b.current >= 0 {
		b.def.States[b.current].Terminal = status
	}
	return b
}

func (b *Builder) state(method string) *queuetytype.MachineStateDef {
	if b.current < 0 {
		b.fail("Call State() before %s.", method)
		return nil
	}
	return &b.def.States[b.current]
}

// Action sets the current state's entry action: the name of a handler
// registered with queuety.Registry.HandleMachineAction (or a Queuety PHP
// StateAction class), queued as a job when the state is entered, with
// payload handed to it as MachineInput.Payload.
func (b *Builder) Action(name string, payload map[string]any) *Builder {
	s := b.state("Action()")
	if s == nil {
		return b
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return b.fail("State machine action class cannot be empty.")
	}
	s.Action = &queuetytype.MachineHandlerRef{Class: name, Payload: maps.Clone(payload)}
	return b
}

// TransitionOption configures one transition.
type TransitionOption func(*queuetytype.MachineTransition)

// Guard makes a transition depend on a guard: the name of a handler
// registered with queuety.Registry.HandleMachineGuard (or a Queuety PHP
// StateGuard class), given payload as MachineInput.Payload.
func Guard(name string, payload map[string]any) TransitionOption {
	return func(t *queuetytype.MachineTransition) {
		t.Guard = &queuetytype.MachineHandlerRef{Class: strings.TrimSpace(name), Payload: maps.Clone(payload)}
	}
}

// Named names a transition for the timeline (default: the event).
func Named(name string) TransitionOption {
	return func(t *queuetytype.MachineTransition) { t.Name = name }
}

// On adds a transition to the current state: event moves the machine to
// target. Several transitions for one event are tried in order; the first
// whose guard allows it is taken.
func (b *Builder) On(event, target string, opts ...TransitionOption) *Builder {
	s := b.state("On()")
	if s == nil {
		return b
	}
	event, target = strings.TrimSpace(event), strings.TrimSpace(target)
	if event == "" {
		return b.fail("State machine transition event cannot be empty.")
	}
	if target == "" {
		return b.fail("State machine transition target cannot be empty.")
	}
	t := queuetytype.MachineTransition{Event: event, Target: target}
	for _, o := range opts {
		o(&t)
	}
	if t.Guard != nil && t.Guard.Class == "" {
		return b.fail("State machine guard class cannot be empty.")
	}
	s.Transitions = append(s.Transitions, t)
	return b
}

// Timeout sends event to the machine when it has waited in the current
// state for d (whole seconds, at least one) without another event. The
// workers' sweeps fire it, once. It is a Go engine extension: Queuety PHP
// ignores it, and it is armed only when a Go process moves the machine
// into the state.
func (b *Builder) Timeout(d time.Duration, event string) *Builder {
	s := b.state("Timeout()")
	if s == nil {
		return b
	}
	s.Timeout = &queuetytype.MachineTimeout{After: d, Event: strings.TrimSpace(event)}
	return b
}

// OnQueue sets the queue of the entry action jobs.
func (b *Builder) OnQueue(queue string) *Builder {
	return b.setText(&b.def.Queue, queue, "State machine queue cannot be empty.")
}

// WithPriority sets the priority of the entry action jobs.
func (b *Builder) WithPriority(p queuetytype.Priority) *Builder {
	b.def.Priority = p
	return b
}

// MaxAttempts sets the attempt limit of the entry action jobs.
func (b *Builder) MaxAttempts(n int) *Builder {
	if n < 1 {
		return b.fail("State machine max_attempts must be at least 1.")
	}
	b.def.MaxAttempts = n
	return b
}

// Version tags the definition with an application-level version.
func (b *Builder) Version(v string) *Builder {
	return b.setText(&b.def.Version, v, "State machine version cannot be empty.")
}

// IdempotencyKey makes Dispatch durable: a second dispatch with the same
// key returns the first machine's id.
func (b *Builder) IdempotencyKey(key string) *Builder {
	return b.setText(&b.def.IdempotencyKey, key, "State machine idempotency key cannot be empty.")
}

// Definition returns the checked definition with its hash set (the
// sha256 Queuety PHP computes over the same JSON).
func (b *Builder) Definition() (queuetytype.MachineDefinition, error) {
	if b.err != nil {
		return queuetytype.MachineDefinition{}, b.err
	}
	_, hash, err := imachine.Encode(b.def)
	if err != nil {
		return queuetytype.MachineDefinition{}, err
	}
	def := b.def
	def.Hash = hash
	return def, nil
}

// Dispatch creates the machine with initial as its public state (nil for
// none) and returns its id (see queuety.Client.DispatchMachine).
func (b *Builder) Dispatch(ctx context.Context, c *queuety.Client, initial any) (int64, error) {
	def, err := b.Definition()
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch state machine %q: %w", b.def.Name, err)
	}
	return c.DispatchMachine(ctx, def, initial)
}
