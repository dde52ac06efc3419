package queuetytype

import (
	"errors"
	"time"
)

// MachineStatus is the lifecycle status of a state machine instance (the
// status column of Queuety's state_machines table).
type MachineStatus string

// Machine statuses, as Queuety PHP's StateMachineStatus enum spells them.
const (
	MachineRunning      MachineStatus = "running"       // an entry action is queued or running
	MachineWaitingEvent MachineStatus = "waiting_event" // waiting for an external event
	MachineCompleted    MachineStatus = "completed"     // reached a completed terminal state
	MachineFailed       MachineStatus = "failed"        // reached a failed terminal state, or an action failed for good
	MachinePaused       MachineStatus = "paused"        // paused (Queuety PHP's enum value; not set by Go)
	MachineCancelled    MachineStatus = "cancelled"     // reached a cancelled terminal state
)

// Terminal reports whether s is a status a terminal state can have:
// completed, failed or cancelled.
func (s MachineStatus) Terminal() bool {
	return s == MachineCompleted || s == MachineFailed || s == MachineCancelled
}

// Valid reports whether s is one of the six statuses.
func (s MachineStatus) Valid() bool {
	switch s {
	case MachineRunning, MachineWaitingEvent, MachineCompleted, MachineFailed, MachinePaused, MachineCancelled:
		return true
	}
	return false
}

// MachineHandlerRef names an entry action or a transition guard: the
// name a worker registered (a PHP class name for Queuety PHP's handlers)
// and the payload it is given.
type MachineHandlerRef struct {
	Class   string         // the handler name
	Payload map[string]any // handed to the handler as MachineInput.Payload
}

// MachineTransition is one event a state accepts.
type MachineTransition struct {
	Event  string             // the event name
	Target string             // the state it moves to
	Guard  *MachineHandlerRef // the guard that must allow it, or nil
	Name   string             // the transition's name (the event when empty)
}

// MachineTimeout fires Event when a machine has stayed in a waiting state
// for After without another event. It is a Go engine extension stored in
// the state's definition ("timeout"); Queuety PHP ignores it.
type MachineTimeout struct {
	After time.Duration // whole seconds
	Event string        // the event sent when it fires
}

// MachineStateDef is one state of a machine definition.
type MachineStateDef struct {
	Name        string              // the state name (1 to 191 bytes)
	Action      *MachineHandlerRef  // the entry action queued as a job when the state is entered, or nil
	Terminal    MachineStatus       // completed, failed or cancelled for a terminal state; "" otherwise
	Transitions []MachineTransition // in the order guards are tried
	Timeout     *MachineTimeout     // nil when the state waits forever
}

// MachineDefinition is a machine's definition bundle, as Queuety PHP's
// StateMachineBuilder::build_runtime_definition() produces it. Build one
// with package machine.
type MachineDefinition struct {
	Name           string            // the machine's name (the name column)
	Initial        string            // the initial state (the first state when empty)
	States         []MachineStateDef // in definition order
	Queue          string            // the queue of entry action jobs
	Priority       Priority          // their priority
	MaxAttempts    int               // their attempt limit
	Version        string            // the application's definition version, or ""
	Hash           string            // sha256 of the definition's JSON (set when it is built)
	IdempotencyKey string            // the durable dispatch key, or ""
}

// MachineState is the persisted status of one machine (Queuety PHP's
// StateMachineState).
type MachineState struct {
	ID                int64          `json:"machine_id"`                   // the machine's id
	Name              string         `json:"name"`                         // the machine's name
	Status            MachineStatus  `json:"status"`                       // its lifecycle status
	CurrentState      string         `json:"current_state"`                // the state it is in
	State             map[string]any `json:"state"`                        // its public state
	AvailableEvents   []string       `json:"available_events"`             // the events the current state accepts, in definition order
	DefinitionVersion string         `json:"definition_version,omitempty"` // the definition's version, or empty
	DefinitionHash    string         `json:"definition_hash,omitempty"`    // the definition's sha256
	IdempotencyKey    string         `json:"idempotency_key,omitempty"`    // the durable dispatch key, or empty
	ErrorMessage      string         `json:"error_message,omitempty"`      // why it failed, or empty
	CurrentAction     string         `json:"current_action,omitempty"`     // the current state's entry action, or empty
	TerminalStatus    MachineStatus  `json:"terminal_status,omitempty"`    // the current state's terminal status, or empty
}

// MachineSummary is one row of a machine listing.
type MachineSummary struct {
	ID                int64         `json:"id"`                           // the machine's id
	Name              string        `json:"name"`                         // the machine's name
	Status            MachineStatus `json:"status"`                       // its lifecycle status
	CurrentState      string        `json:"current_state"`                // the state it is in
	DefinitionVersion string        `json:"definition_version,omitempty"` // the definition's version, or empty
	DefinitionHash    string        `json:"definition_hash,omitempty"`    // the definition's sha256
	IdempotencyKey    string        `json:"idempotency_key,omitempty"`    // the durable dispatch key, or empty
	StartedAt         time.Time     `json:"started_at"`                   // when it was dispatched
	UpdatedAt         time.Time     `json:"updated_at"`                   // when its row last changed
	CompletedAt       time.Time     `json:"completed_at"`                 // when it completed or was cancelled (zero if not)
	FailedAt          time.Time     `json:"failed_at"`                    // when it failed (zero if not)
	// AvailableEvents are the events the current state accepts.
	AvailableEvents []string `json:"available_events"`
}

// MachineFilter selects machines to list.
type MachineFilter struct {
	Status MachineStatus // "" for every status
	Name   string        // "" for every name
	Limit  int           // at most this many, newest first (50 when 0)
}

// MachineEventType is the event column of a state machine event row.
type MachineEventType string

// Machine event types, as Queuety PHP records them.
const (
	MachineEventStarted         MachineEventType = "machine_started"
	MachineEventWaiting         MachineEventType = "machine_waiting"
	MachineEventReceived        MachineEventType = "event_received"
	MachineEventRejected        MachineEventType = "event_rejected"
	MachineEventTransitioned    MachineEventType = "transitioned"
	MachineEventActionEnqueued  MachineEventType = "action_enqueued"
	MachineEventActionStarted   MachineEventType = "action_started"
	MachineEventActionCompleted MachineEventType = "action_completed"
	MachineEventActionFailed    MachineEventType = "action_failed"
	MachineEventGuardStarted    MachineEventType = "guard_started"
	MachineEventGuardCompleted  MachineEventType = "guard_completed"
	MachineEventGuardFailed     MachineEventType = "guard_failed"
	MachineEventCompleted       MachineEventType = "machine_completed"
	MachineEventFailed          MachineEventType = "machine_failed"
	MachineEventCancelled       MachineEventType = "machine_cancelled"
)

// MachineEvent is one row of a machine's timeline (Queuety's
// state_machine_events table). The JSON columns hold their stored text.
type MachineEvent struct {
	ID             int64            `json:"id"`                        // the row's id, in timeline order
	MachineID      int64            `json:"machine_id"`                // the machine
	JobID          int64            `json:"job_id,omitempty"`          // the entry action job, or 0
	StateName      string           `json:"state_name"`                // the state the event happened in
	Handler        string           `json:"handler,omitempty"`         // the action or guard, or empty
	Event          MachineEventType `json:"event"`                     // what happened
	EventName      string           `json:"event_name,omitempty"`      // the machine event involved, or empty
	TransitionName string           `json:"transition_name,omitempty"` // the transition taken or guarded, or empty
	Queue          string           `json:"queue,omitempty"`           // the action job's queue, or empty
	Attempt        *int             `json:"attempt,omitempty"`         // the action job's attempt, or nil
	Input          []byte           `json:"-"`                         // JSON text: what the step was given, or nil
	Output         []byte           `json:"-"`                         // JSON text: what it produced, or nil
	StateBefore    []byte           `json:"-"`                         // JSON text: the public state before, or nil
	StateAfter     []byte           `json:"-"`                         // JSON text: the public state after, or nil
	Context        []byte           `json:"-"`                         // JSON text: context such as from and to, or nil
	Artifacts      []byte           `json:"-"`                         // JSON text: artifact references, or nil
	Chunks         []byte           `json:"-"`                         // JSON text: chunk references, or nil
	Error          []byte           `json:"-"`                         // JSON text: the error (message, class, trace), or nil
	DurationMS     *int64           `json:"duration_ms,omitempty"`     // how long the action or guard ran, or nil
	CreatedAt      time.Time        `json:"created_at"`                // when it was recorded (seconds)
}

// MachineInput is what an entry action or a guard is given.
type MachineInput struct {
	MachineID    int64          // the machine
	StateName    string         // the state the action was queued for, or the guard's source state
	State        map[string]any // the machine's public state
	Event        string         // the event that led into the state (action) or is being guarded
	EventPayload map[string]any // that event's payload
	Payload      map[string]any // the action's or guard's payload from the definition
}

// ErrEventRejected is returned, wrapped with the reason, when a state
// machine does not accept an event: it is not waiting for events, its
// state has no transition for the event, or every guard refused it. The
// rejection is recorded on the machine's timeline (event_rejected).
var ErrEventRejected = errors.New("queuety: state machine event rejected")
