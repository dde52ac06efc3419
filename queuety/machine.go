package queuety

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/queuetytype"
)

// MachineActionFunc is a state machine entry action (Queuety PHP's
// StateAction). It runs as a job when its state is entered and returns
// the keys to merge into the machine's public state (keys starting with
// "_" are not merged). Returning "_event" (a string) sends that event at
// once, with "_event_payload" (a map) as its payload, or the merged keys
// when there is none; without it the machine waits for external events.
// An error fails the attempt; after the job's last attempt the machine
// fails.
type MachineActionFunc func(ctx context.Context, in queuetytype.MachineInput) (State, error)

// MachineGuardFunc is a transition guard (Queuety PHP's StateGuard): the
// transition is taken only when it returns true. Guards run inside the
// transaction that applies the event, and may run again if the database
// asks for the transaction to be retried, so they must not have side
// effects. An error rejects the event.
type MachineGuardFunc func(ctx context.Context, in queuetytype.MachineInput) (bool, error)

// HandleMachineAction registers a state machine entry action under name
// (the action's class name in a definition). The concurrency group and
// limit and the cost units Defaults sets for name go on the action's jobs,
// as Queuety PHP takes them from the action class: a client applies its
// registry's (WithRegistry) to the jobs it queues, a worker its own to the
// jobs queued by the actions it runs. A worker with any action
// registered runs the entry action jobs of its queues; give machines whose
// actions Queuety PHP runs their own queue (machine.Builder.OnQueue). It
// panics on an empty name, a nil function or a name registered twice.
func (r *Registry) HandleMachineAction(name string, fn MachineActionFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkMachine(name, fn == nil)
	if _, ok := r.machineActions[name]; ok {
		panic("queuety: register state machine action " + name + ": already registered")
	}
	if r.machineActions == nil {
		r.machineActions = map[string]MachineActionFunc{}
	}
	r.machineActions[name] = fn
	if _, ok := r.jobs[machine.ActionJobHandler]; !ok {
		r.jobs[machine.ActionJobHandler] = r.runMachineAction
	}
}

// HandleMachineGuard registers a transition guard under name (the guard's
// class name in a definition). It panics on an empty name, a nil function
// or a name registered twice.
func (r *Registry) HandleMachineGuard(name string, fn MachineGuardFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkMachine(name, fn == nil)
	if _, ok := r.machineGuards[name]; ok {
		panic("queuety: register state machine guard " + name + ": already registered")
	}
	if r.machineGuards == nil {
		r.machineGuards = map[string]MachineGuardFunc{}
	}
	r.machineGuards[name] = fn
}

func (r *Registry) checkMachine(name string, nilFn bool) {
	if err := dispatch.ValidateHandlerName(name); err != nil {
		panic(fmt.Sprintf("queuety: register state machine handler: %v", err))
	}
	if nilFn {
		panic("queuety: register state machine handler " + name + ": nil function")
	}
}

// machineHandlers returns r's guards and actions in the runtime's form; a
// nil registry has none.
func (r *Registry) machineHandlers() machine.Handlers {
	if r == nil {
		return machine.Handlers{}
	}
	return machine.Handlers{
		Guard: func(name string) (machine.GuardFunc, bool) {
			r.mu.RLock()
			fn, ok := r.machineGuards[name]
			r.mu.RUnlock()
			if !ok {
				return nil, false
			}
			return machine.GuardFunc(fn), true
		},
		Action: func(name string) (machine.ActionFunc, bool) {
			r.mu.RLock()
			fn, ok := r.machineActions[name]
			r.mu.RUnlock()
			if !ok {
				return nil, false
			}
			return func(ctx context.Context, in queuetytype.MachineInput) (map[string]any, error) { return fn(ctx, in) }, true
		},
	}
}

// runMachineAction is the job handler of entry action jobs.
func (r *Registry) runMachineAction(ctx context.Context, payload Payload) error {
	e, ok := engine.AttemptEngine(ctx)
	info, ok2 := JobInfoFrom(ctx)
	if !ok || !ok2 {
		return NonRetryable(fmt.Errorf("%w: a state machine action runs only in a worker", queuetytype.ErrNoAttempt))
	}
	rt := &machine.Runtime{Store: e.Store(), Now: e.Clock().Now, ActionResources: r.actionResources()}
	job := machine.Job{ID: info.JobID, Queue: info.Queue, Attempt: info.Attempt}
	job.Fence, _ = engine.AttemptFence(ctx)
	final := func(err error) bool { return info.Attempt >= info.MaxAttempts || IsNonRetryable(err) }
	err := rt.RunAction(ctx, job, r.machineHandlers(), final)
	if errors.Is(err, queuetytype.ErrInvalidArgument) {
		return NonRetryable(err)
	}
	return err
}

// actionResources returns the concurrency group, limit and cost units
// the Defaults of r give an entry action's jobs; nil for a nil registry.
func (r *Registry) actionResources() func(class string) (queuetytype.JobResources, error) {
	if r == nil {
		return nil
	}
	return func(class string) (queuetytype.JobResources, error) {
		defs := r.DefaultsOf(class)
		if len(defs) == 0 {
			return queuetytype.JobResources{}, nil
		}
		spec := ResolveJobOptions(defs...)
		if err := dispatch.ValidateJobSpec(spec); err != nil {
			return queuetytype.JobResources{}, err
		}
		return spec.Resources, nil
	}
}

func (c *Client) machines() *machine.Runtime {
	return &machine.Runtime{Store: c.store, Now: c.engine.Clock().Now, ActionResources: c.registry.actionResources()}
}

// DispatchMachine creates a state machine instance from def (built with
// package machine) with initial as its public state, and returns its id.
// The machine enters its initial state in the same transaction: an entry
// action is queued, or it waits for events. With an idempotency key
// already used, it returns the existing machine's id and writes nothing.
// Invalid definitions return an error wrapping ErrInvalidArgument.
func (c *Client) DispatchMachine(ctx context.Context, def queuetytype.MachineDefinition, initial any) (int64, error) {
	return c.machines().Dispatch(ctx, def, initial)
}

// MachineEvent sends event with payload (merged into the public state,
// except keys starting with "_") to a machine waiting for events, and
// applies the first transition of its current state for the event whose
// guard allows it (Queuety PHP's machine_event). The transition is one
// transaction under the machine's row lock, so concurrent events from any
// number of processes apply one at a time, each exactly once. A rejected
// event is recorded and returned as an error wrapping ErrEventRejected.
func (c *Client) MachineEvent(ctx context.Context, id int64, event string, payload any) error {
	return c.machines().Send(ctx, id, event, payload, c.registry.machineHandlers())
}

// MachineStatus reads a machine's status: its current state, public
// state, the events it accepts now and its definition metadata.
func (c *Client) MachineStatus(ctx context.Context, id int64) (*queuetytype.MachineState, error) {
	return c.machines().Status(ctx, id)
}

// ListMachines lists machines, newest first.
func (c *Client) ListMachines(ctx context.Context, f queuetytype.MachineFilter) ([]*queuetytype.MachineSummary, error) {
	return c.machines().List(ctx, f)
}

// MachineTimeline lists a machine's events in order: limit rows from
// offset (limit 0: all of them).
func (c *Client) MachineTimeline(ctx context.Context, id int64, limit, offset int) ([]*queuetytype.MachineEvent, error) {
	return c.machines().Timeline(ctx, id, limit, offset)
}

// MachineTrace returns a machine's trace bundle as JSON, in Queuety PHP's
// machine_trace shape: the machine, its events grouped by state, the
// events, its action jobs and their logs, artifact and chunk references.
func (c *Client) MachineTrace(ctx context.Context, id int64) ([]byte, error) {
	return c.machines().Trace(ctx, id)
}

// MachineStateAt returns the public state a machine had after the event
// with id eventID.
func (c *Client) MachineStateAt(ctx context.Context, id, eventID int64) (State, error) {
	return c.machines().StateAt(ctx, id, eventID)
}

// FireMachineTimeouts fires up to limit due state timeouts
// (machine.Builder.Timeout) with the guards of guards, then those of the
// client's registry (WithRegistry), and returns how many it handled.
// Workers run it in their sweeps; each timeout fires once however many
// sweep at the same time.
func (c *Client) FireMachineTimeouts(ctx context.Context, guards *Registry, limit int) (int, error) {
	return c.machines().SweepTimeouts(ctx, max(limit, 1), guards.machineHandlers().Or(c.registry.machineHandlers()))
}
