package queuety

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// WorkflowStep is one step of a WorkflowDefinition. The builder package
// fills these in; it is exported for tools that build definitions directly.
//
// Default names follow Queuety: the step's index ("0", "1", ...) for
// single, parallel, for_each and run_workflow steps, "delay_<n>" for the
// n-th delay, "wait_for_<signal>", "repeat_<while|until>_<index>",
// "start_workflows_<index>", "wait_for_workflows_<index>" and, for a wait
// on a workflow group, "wait_for_workflow_group_<index>".
type WorkflowStep struct {
	Type     queuetytype.StepType
	Name     string        // default: see above
	Handler  string        // queuetytype.StepSingle; queuetytype.StepForEach: the branch handler (HandleForEach)
	Handlers []string      // queuetytype.StepParallel
	Delay    time.Duration // queuetytype.StepDelay, whole seconds
	Signal   string        // queuetytype.StepWaitForSignal: the signal (see Signals)
	// Signals are the signals a queuetytype.StepWaitForSignal step waits for when it
	// waits for more than one (Queuety's wait_for_signals()); Mode says
	// whether all of them (WaitAll, the default) or any one (WaitAny) must
	// arrive. When set, Signal is ignored.
	Signals []string
	// HumanWait marks a signal wait as waiting on a person: "approval",
	// "decision" (Signals are the approve and the reject signal, and the
	// outcome is recorded as approved or rejected) or "input" (Queuety's
	// wait_for_approval, wait_for_decision, wait_for_input).
	HumanWait string
	// Compensation names the handler that undoes this step (Queuety's
	// compensate_with(), registered with HandleCompensation). It runs, with
	// the public state as it was right after the step, when the workflow
	// is cancelled, or fails with CompensateOnFailure set.
	Compensation string
	// ResultKey stores a step's result under one state key: a signal's
	// payload (queuetytype.StepWaitForSignal, instead of merging its keys), a for-each
	// aggregate (queuetytype.StepForEach), the started workflow ids
	// (queuetytype.StepStartWorkflows, default "started_workflow_ids") or the awaited
	// workflows' states (queuetytype.StepWaitForWorkflows).
	ResultKey string
	// Timeout gives up waiting for the signal after this long
	// (queuetytype.StepWaitForSignal; zero waits forever). The workflow then continues
	// with TimedOutKey(...) set to true in its state.
	Timeout time.Duration
	// MatchPayload makes a queuetytype.StepWaitForSignal step count only
	// signals whose payload contains every key of it with an equal value
	// (objects compared key by key, recursively; Queuety's match_payload).
	// Its keys are stored sorted. Empty matches every signal.
	MatchPayload State
	// CorrelationKey makes a queuetytype.StepWaitForSignal step count only
	// signals whose payload has this key with the value the workflow's
	// state has under it (Queuety's correlation_key); a signal or state
	// without the key does not count. Empty means none.
	CorrelationKey string
	// Options are the step's job options: queue, priority, attempts,
	// backoff and activity timeouts. Unset fields take the workflow's.
	// They apply to single, parallel and for_each steps (every branch).
	Options queuetytype.JobSpec

	// ItemsKey is the state key holding the list of items (queuetytype.StepForEach,
	// queuetytype.StepStartWorkflows).
	ItemsKey string
	// Mode is the completion mode: ForEachAll (default), ForEachFirstSuccess
	// or ForEachQuorum for queuetytype.StepForEach; WaitAll (default), WaitAny or
	// WaitQuorum for queuetytype.StepWaitForWorkflows.
	Mode string
	// Quorum is the successes (queuetytype.StepForEach) or finished workflows
	// (queuetytype.StepWaitForWorkflows) the quorum mode needs; at least 1 then, 0
	// otherwise.
	Quorum int
	// Reducer names a reducer (HandleReducer) that turns a settled
	// for-each aggregate into state keys (queuetytype.StepForEach; optional).
	Reducer string

	// RepeatMode is RepeatWhile or RepeatUntil (queuetytype.StepRepeat).
	RepeatMode string
	// Target names the earlier step a repeat jumps back to (queuetytype.StepRepeat).
	Target string
	// StateKey and Expected are a repeat's condition: the state key equals
	// Expected (a JSON value; nil is null). Give either StateKey or
	// Condition (queuetytype.StepRepeat).
	StateKey string
	Expected any
	// Condition names a repeat condition (HandleRepeatCondition) deciding
	// the repeat instead of StateKey (queuetytype.StepRepeat).
	Condition string
	// MaxIterations caps how often a repeat jumps back; 0 means no cap
	// (queuetytype.StepRepeat).
	MaxIterations int

	// Child is the workflow a queuetytype.StepRunWorkflow step runs (Child.Name is
	// stored as workflow_name; only its steps, queue, priority and max
	// attempts are kept) or a queuetytype.StepStartWorkflows step starts per item (its
	// whole runtime definition is kept).
	Child *WorkflowDefinition
	// PayloadKey is the child state key a scalar item is stored under
	// (queuetytype.StepStartWorkflows, default "item"); object items are merged.
	PayloadKey string
	// InheritState merges the parent's public state into each started
	// workflow's initial state (queuetytype.StepStartWorkflows; the builder's default
	// is true).
	InheritState bool
	// GroupKey records the started workflow ids under this group, for a
	// later group wait (queuetytype.StepStartWorkflows; optional).
	GroupKey string

	// A queuetytype.StepWaitForWorkflows step waits for exactly one of: the workflows
	// WorkflowIDs, the id or ids in state key WorkflowIDKey, or the group
	// WorkflowGroupKey recorded by a queuetytype.StepStartWorkflows step.
	WorkflowIDs      []int64
	WorkflowIDKey    string
	WorkflowGroupKey string
}

// WorkflowDefinition is everything needed to dispatch a workflow.
type WorkflowDefinition struct {
	Name        string
	Steps       []WorkflowStep
	Queue       string               // default "default"
	Priority    queuetytype.Priority // default queuetytype.PriorityLow
	MaxAttempts int                  // per step; default 3
	// ExecutionTimeout is the deadline for the whole workflow (Queuety's
	// must_complete_within), counted from dispatch and never extended.
	// Zero means none; otherwise at least one second, rounded up to whole
	// seconds.
	ExecutionTimeout time.Duration
	// RunTimeout bounds each run: dispatch, every RetryWorkflow and every
	// continue-as-new start a new run whose deadline is its start plus
	// RunTimeout, capped at the execution deadline. Zero means none.
	RunTimeout time.Duration
	// OnDeadline names the callback run once when the workflow passes its
	// deadline (registered with HandleDeadline); at least once if a worker
	// dies while running it (see CallbackFunc).
	OnDeadline string
	// OnCancel names the callback run once when the workflow is cancelled;
	// at least once if a worker dies while running it (see CallbackFunc).
	OnCancel string
	// IdempotencyKey makes dispatch return the existing workflow's id when
	// the key was used before.
	IdempotencyKey string
	// Version is stored as _definition_version.
	Version string
	// MaxForEachItems caps the items one for-each step may expand into
	// (Queuety's max_for_each_items budget). Zero means none.
	MaxForEachItems int
	// MaxStartedWorkflows caps the workflows the workflow's
	// start_workflows steps may start in total (Queuety's
	// max_started_workflows budget). Zero means none.
	MaxStartedWorkflows int
	// MaxTransitions caps the step transitions of the whole run (Queuety's
	// max_transitions budget): a runaway loop fails instead of spinning.
	// Zero means none.
	MaxTransitions int
	// MaxStateBytes caps the size of the public state as JSON (Queuety's
	// max_state_bytes budget), the initial state included. Zero means none.
	MaxStateBytes int
	// MaxCostUnits caps the cost units of the jobs the workflow ran
	// (Queuety's max_cost_units budget). Zero means none.
	MaxCostUnits int
	// PruneStateAfter drops a step's output keys from the state once that
	// many later steps have completed (Queuety's prune_state_after), so
	// long workflows do not carry every intermediate result. Zero keeps
	// everything.
	PruneStateAfter int
	// CompensateOnFailure runs the completed steps' compensations, newest
	// first, when the workflow fails or passes its deadline (Queuety's
	// compensate_on_failure()). Cancelling always runs them. A compensated
	// workflow cannot be retried.
	CompensateOnFailure bool
}

// Validate checks a definition without changing it: the same checks
// DispatchWorkflow runs before it writes anything.
func (d WorkflowDefinition) Validate() error {
	_, err := d.normalized()
	return err
}

// normalized returns a validated copy of d with default step names filled
// in. The caller's Steps slice is never written to.
func (d WorkflowDefinition) normalized() (WorkflowDefinition, error) {
	d.Steps = append([]WorkflowStep(nil), d.Steps...)
	return d, d.validate()
}

// validate checks a definition and fills in default step names; d must own
// its Steps slice.
func (d *WorkflowDefinition) validate() error {
	return d.validateAt(0)
}

// maxNesting bounds how deep child workflow definitions may nest.
const maxNesting = 8

// validateAt is validate for a definition nested depth child definitions
// deep.
func (d *WorkflowDefinition) validateAt(depth int) error {
	if depth > maxNesting {
		return invalidf("child workflows nest more than %d deep", maxNesting)
	}
	if strings.TrimSpace(d.Name) == "" {
		return invalidf("workflow name is empty")
	}
	if len(d.Name) > 255 {
		return invalidf("workflow name is longer than 255 characters")
	}
	if len(d.Steps) == 0 {
		return invalidf("workflow %q has no steps", d.Name)
	}
	if len(d.Steps) > queuetytype.MaxSteps {
		return invalidf("workflow %q has %d steps; at most %d are allowed", d.Name, len(d.Steps), queuetytype.MaxSteps)
	}
	if len(d.Queue) > 64 {
		return invalidf("queue name %q is longer than 64 characters", d.Queue)
	}
	if !d.Priority.Valid() {
		return invalidf("priority %d out of range (0-3)", int(d.Priority))
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > queuetytype.MaxAttemptsLimit {
		return invalidf("max attempts %d out of range (1-%d)", d.MaxAttempts, queuetytype.MaxAttemptsLimit)
	}
	if d.ExecutionTimeout < 0 || (d.ExecutionTimeout > 0 && d.ExecutionTimeout < time.Second) {
		return timeoutf("execution timeout must be at least 1 second, got %s", d.ExecutionTimeout)
	}
	if d.RunTimeout < 0 || (d.RunTimeout > 0 && d.RunTimeout < time.Second) {
		return timeoutf("run timeout must be at least 1 second, got %s", d.RunTimeout)
	}
	if d.OnDeadline != "" {
		if err := dispatch.ValidateHandlerName(d.OnDeadline); err != nil {
			return fmt.Errorf("on-deadline handler: %w", err)
		}
	}
	if d.OnCancel != "" {
		if err := dispatch.ValidateHandlerName(d.OnCancel); err != nil {
			return fmt.Errorf("on-cancel handler: %w", err)
		}
	}
	if len(d.IdempotencyKey) > 191 {
		return invalidf("idempotency key is longer than 191 characters")
	}
	if d.MaxForEachItems < 0 {
		return invalidf("max for-each items must be at least 1, got %d", d.MaxForEachItems)
	}
	if d.MaxStartedWorkflows < 0 {
		return invalidf("max started workflows must be at least 1, got %d", d.MaxStartedWorkflows)
	}
	for _, b := range []struct {
		name string
		n    int
	}{{"max transitions", d.MaxTransitions}, {"max state bytes", d.MaxStateBytes}, {"max cost units", d.MaxCostUnits},
		{"prune state after", d.PruneStateAfter}} {
		if b.n < 0 {
			return invalidf("%s must be at least 1, got %d", b.name, b.n)
		}
	}
	names := map[string]int{}
	delays := 0
	for i := range d.Steps {
		s := &d.Steps[i]
		if s.Name == "" {
			s.Name = s.defaultName(i, delays)
		}
		if s.Type == queuetytype.StepDelay {
			delays++
		}
		if len(s.Name) > 191 {
			return invalidf("step %d: name is longer than 191 characters", i)
		}
		if j, dup := names[s.Name]; dup {
			return invalidf("steps %d and %d have the same name %q", j, i, s.Name)
		}
		if err := s.validate(i, names, depth); err != nil {
			return err
		}
		names[s.Name] = i
	}
	return nil
}

// defaultName is Queuety's name for step i without one; delays counts
// the delay steps before it.
func (s *WorkflowStep) defaultName(i, delays int) string {
	switch s.Type {
	case queuetytype.StepDelay:
		return "delay_" + strconv.Itoa(delays)
	case queuetytype.StepWaitForSignal:
		names := s.signalNames()
		switch {
		case s.HumanWait != "":
			return "wait_for_" + s.HumanWait
		case len(names) == 1:
			return "wait_for_" + names[0]
		}
		return "wait_for_signals_" + strconv.Itoa(i)
	case queuetytype.StepRepeat:
		return "repeat_" + s.RepeatMode + "_" + strconv.Itoa(i)
	case queuetytype.StepStartWorkflows:
		return "start_workflows_" + strconv.Itoa(i)
	case queuetytype.StepWaitForWorkflows:
		if s.WorkflowGroupKey != "" {
			return "wait_for_workflow_group_" + strconv.Itoa(i)
		}
		return "wait_for_workflows_" + strconv.Itoa(i)
	}
	return strconv.Itoa(i)
}

// validate checks step i; earlier holds the names of the steps before it
// and depth how deep its workflow is nested.
func (s *WorkflowStep) validate(i int, earlier map[string]int, depth int) error {
	if s.Compensation != "" {
		if err := dispatch.ValidateHandlerName(s.Compensation); err != nil {
			return fmt.Errorf("step %d (%s): compensation: %w", i, s.Name, err)
		}
	}
	switch s.Type {
	case queuetytype.StepSingle:
		if err := dispatch.ValidateHandlerName(s.Handler); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
		}
		if engine.IsInternalHandler(s.Handler) {
			return invalidf("step %d (%s): handler names starting with __queuety_ are reserved", i, s.Name)
		}
	case queuetytype.StepParallel:
		if len(s.Handlers) == 0 {
			return invalidf("step %d (%s): parallel step has no handlers", i, s.Name)
		}
		for _, h := range s.Handlers {
			if err := dispatch.ValidateHandlerName(h); err != nil {
				return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
			}
		}
	case queuetytype.StepDelay:
		if s.Delay < 0 {
			return invalidf("step %d (%s): sleep duration must not be negative, got %s", i, s.Name, s.Delay)
		}
	case queuetytype.StepWaitForSignal:
		names := s.signalNames()
		if len(names) == 0 {
			return invalidf("step %d (%s): signal name is empty", i, s.Name)
		}
		for _, n := range names {
			if strings.TrimSpace(n) == "" || len(n) > 255 {
				return invalidf("step %d (%s): signal names must be 1-255 characters, got %q", i, s.Name, n)
			}
		}
		if s.Mode != "" && s.Mode != queuetytype.WaitAll && s.Mode != queuetytype.WaitAny {
			return invalidf("step %d (%s): a signal wait waits for all or any of its signals, not %q", i, s.Name, s.Mode)
		}
		switch s.HumanWait {
		case "", "approval", "input":
		case "decision":
			if len(names) != 2 || names[0] == names[1] {
				return invalidf("step %d (%s): a decision waits for two different signals (approve, reject), got %v", i, s.Name, names)
			}
		default:
			return invalidf("step %d (%s): unknown human wait %q (approval, decision or input)", i, s.Name, s.HumanWait)
		}
		if s.Timeout < 0 || (s.Timeout > 0 && s.Timeout < time.Second) {
			return timeoutf("step %d (%s): signal timeout must be at least 1 second, got %s", i, s.Name, s.Timeout)
		}
		if err := s.validateMatching(); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
		}
	case queuetytype.StepForEach, queuetytype.StepRepeat, queuetytype.StepRunWorkflow, queuetytype.StepStartWorkflows, queuetytype.StepWaitForWorkflows:
		if err := s.validateComposite(earlier, depth); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
		}
	default:
		return invalidf("step %d: unknown step type %q", i, s.Type)
	}
	if s.Type != queuetytype.StepWaitForSignal && (len(s.MatchPayload) > 0 || s.CorrelationKey != "") {
		return invalidf("step %d (%s): MatchPayload and CorrelationKey apply to signal waits only", i, s.Name)
	}
	if s.Options.Delay < 0 {
		return invalidf("step %d (%s): delay must not be negative", i, s.Name)
	}
	if s.Options.DependsOn != 0 || s.Options.Unique {
		return invalidf("step %d (%s): DependsOn and Unique apply to plain jobs, not to workflow steps", i, s.Name)
	}
	if err := dispatch.ValidateJobSpec(s.Options); err != nil {
		return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
	}
	return nil
}

// signalNames are the signals a signal wait waits for.
func (s *WorkflowStep) signalNames() []string {
	if len(s.Signals) > 0 {
		return s.Signals
	}
	if s.Signal == "" {
		return nil
	}
	return []string{s.Signal}
}

// encode writes the step in Queuety's _steps shape (see
// internal/workflowdef), followed by its options in the keys Queuety's
// StepDispatchOptions reads (queue, priority, max_attempts, backoff,
// timeout_seconds) and the Go engine's timeout keys.
func (s *WorkflowStep) encode() *phpjson.Object {
	sp := &workflowdef.Spec{
		Type: s.Type, Name: s.Name, Handler: s.Handler, Handlers: s.Handlers, Delay: s.Delay,
		Signals: s.signalNames(), HumanWait: s.HumanWait, Compensation: s.Compensation, ResultKey: s.ResultKey,
		Timeout: s.Timeout, CorrelationKey: s.CorrelationKey, Mode: s.Mode, ItemsKey: s.ItemsKey, Quorum: s.Quorum, Reducer: s.Reducer,
		RepeatMode: s.RepeatMode, Target: s.Target, StateKey: s.StateKey, Condition: s.Condition,
		MaxIterations: s.MaxIterations, PayloadKey: s.PayloadKey, InheritState: s.InheritState, GroupKey: s.GroupKey,
		WorkflowIDs: s.WorkflowIDs, WorkflowIDKey: s.WorkflowIDKey, WorkflowGroupKey: s.WorkflowGroupKey,
		Options: encodeStepOptions(s.Options),
	}
	switch s.Type {
	case queuetytype.StepWaitForSignal:
		if len(s.MatchPayload) > 0 {
			sp.MatchPayload, _ = workflowstate.ToObject("match payload", s.MatchPayload)
		}
	case queuetytype.StepRepeat:
		sp.Expected, _ = normalizeExpected(s.Expected)
	case queuetytype.StepRunWorkflow:
		c := s.Child.engineDefinition()
		sp.Child = &workflowdef.Child{Name: c.Name, Steps: c.Steps, Queue: c.Queue, Priority: c.Priority, MaxAttempts: c.MaxAttempts}
	case queuetytype.StepStartWorkflows:
		sp.ChildRuntime = s.Child.engineDefinition().RuntimeObject()
	}
	return workflowdef.Encode(sp)
}

// encodeStepOptions writes a step's job options.
func encodeStepOptions(opt queuetytype.JobSpec) *phpjson.Object {
	o := phpjson.NewObject()
	if opt.Queue != "" {
		o.Set("queue", opt.Queue)
	}
	if opt.PrioritySet {
		o.Set("priority", int64(opt.Priority))
	}
	if opt.MaxAttempts > 0 {
		o.Set("max_attempts", int64(opt.MaxAttempts))
	}
	if opt.Delay > 0 {
		o.Set("job_delay_seconds", int64(math.Ceil(opt.Delay.Seconds())))
	}
	engine.EncodeStepResources(opt.Resources, o)
	rt := jobruntime.EncodeStep(opt.Backoff, opt.Timeouts)
	for _, k := range rt.Keys() {
		v, _ := rt.Get(k)
		o.Set(k, v)
	}
	return o
}

// encodeSteps writes a validated definition's _steps entries.
func (d WorkflowDefinition) encodeSteps() []any {
	steps := make([]any, len(d.Steps))
	for i := range d.Steps {
		steps[i] = d.Steps[i].encode()
	}
	return steps
}

// engineDefinition turns a validated definition into the engine's form:
// the runtime-definition header and the encoded steps.
func (d WorkflowDefinition) engineDefinition() dispatch.Definition {
	return dispatch.Definition{
		MaxForEachItems: d.MaxForEachItems, MaxStartedWorkflows: d.MaxStartedWorkflows,
		MaxTransitions: d.MaxTransitions, MaxStateBytes: d.MaxStateBytes, MaxCostUnits: d.MaxCostUnits,
		PruneAfter: d.PruneStateAfter, CompensateOnFailure: d.CompensateOnFailure,
		Name: d.Name, Steps: d.encodeSteps(), Queue: d.Queue, Priority: d.Priority, MaxAttempts: d.MaxAttempts,
		OnCancel: d.OnCancel, OnDeadline: d.OnDeadline,
		DeadlineSecs:   int64(math.Ceil(d.ExecutionTimeout.Seconds())),
		RunTimeoutSecs: int64(math.Ceil(d.RunTimeout.Seconds())),
		Version:        d.Version, IdempotencyKey: d.IdempotencyKey,
	}
}

// DispatchWorkflow validates def and starts a workflow with the initial
// state (a State, map or struct encoding as a JSON object). In one
// transaction it writes the workflow row, the first step's job(s) and the
// workflow_started log, all in Queuety's format. With an idempotency key
// that was used before, it returns the existing workflow's id and writes
// nothing. Invalid definitions return an error wrapping ErrInvalidArgument
// or ErrInvalidTimeout.
func (c *Client) DispatchWorkflow(ctx context.Context, def WorkflowDefinition, initial any) (int64, error) {
	def, err := def.normalized()
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow: %w", err)
	}
	state, err := workflowstate.ToObject("initial state", initial)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	return c.engine.Dispatcher().DispatchWorkflow(ctx, def.engineDefinition(), state)
}

// TimedOutKey is the state key a signal wait with a timeout sets: true when
// the timer won, false when the signal arrived first. name is the wait's
// result key, or its signal name when it has none.
func TimedOutKey(name string) string { return workflowstate.TimedOutKey(name) }
