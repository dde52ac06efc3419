package queuety

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// StepType names a kind of workflow step, as stored in _steps[i].type.
type StepType string

// The step types the Go engine builds and runs. Steps of other types
// written by Queuety PHP (for_each, repeat, run_workflow, ...) are enqueued
// faithfully when a workflow reaches them, for a PHP worker to run.
const (
	StepSingle        StepType = "single"
	StepParallel      StepType = "parallel"
	StepDelay         StepType = "delay"
	StepWaitForSignal StepType = "wait_for_signal"
)

// MaxSteps is the most steps a workflow can have (Queuety stores step
// indexes in TINYINT UNSIGNED columns).
const MaxSteps = 255

// WorkflowStep is one step of a WorkflowDefinition. The builder package
// fills these in; it is exported for tools that build definitions directly.
type WorkflowStep struct {
	Type     StepType
	Name     string        // default: the index ("0"), "delay_<n>", or "wait_for_<signal>"
	Handler  string        // StepSingle
	Handlers []string      // StepParallel
	Delay    time.Duration // StepDelay, whole seconds
	Signal   string        // StepWaitForSignal
	// ResultKey stores a signal's payload under one state key instead of
	// merging its keys (StepWaitForSignal).
	ResultKey string
	// Timeout gives up waiting for the signal after this long
	// (StepWaitForSignal; zero waits forever). The workflow then continues
	// with TimedOutKey(...) set to true in its state.
	Timeout time.Duration
	// Options are the step's job options: queue, priority, attempts,
	// backoff and activity timeouts. Unset fields take the workflow's.
	Options JobSpec
}

// WorkflowDefinition is everything needed to dispatch a workflow.
type WorkflowDefinition struct {
	Name        string
	Steps       []WorkflowStep
	Queue       string   // default "default"
	Priority    Priority // default PriorityLow
	MaxAttempts int      // per step; default 3
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
	// deadline (registered with HandleDeadline).
	OnDeadline string
	// OnCancel names the callback run once when the workflow is cancelled.
	OnCancel string
	// IdempotencyKey makes dispatch return the existing workflow's id when
	// the key was used before.
	IdempotencyKey string
	// Version is stored as _definition_version.
	Version string
}

// TimedOutKey is the state key a signal wait with a timeout sets: true when
// the timer won, false when the signal arrived first. name is the wait's
// result key, or its signal name when it has none.
func TimedOutKey(name string) string { return name + "_timed_out" }

// runTimeoutKey stores the run timeout in the workflow's private state.
const runTimeoutKey = "_run_timeout_seconds"

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
	if strings.TrimSpace(d.Name) == "" {
		return invalidf("workflow name is empty")
	}
	if len(d.Name) > 255 {
		return invalidf("workflow name is longer than 255 characters")
	}
	if len(d.Steps) == 0 {
		return invalidf("workflow %q has no steps", d.Name)
	}
	if len(d.Steps) > MaxSteps {
		return invalidf("workflow %q has %d steps; at most %d are allowed", d.Name, len(d.Steps), MaxSteps)
	}
	if len(d.Queue) > 64 {
		return invalidf("queue name %q is longer than 64 characters", d.Queue)
	}
	if !d.Priority.Valid() {
		return invalidf("priority %d out of range (0-3)", int(d.Priority))
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > MaxAttemptsLimit {
		return invalidf("max attempts %d out of range (1-%d)", d.MaxAttempts, MaxAttemptsLimit)
	}
	if d.ExecutionTimeout < 0 || (d.ExecutionTimeout > 0 && d.ExecutionTimeout < time.Second) {
		return timeoutf("execution timeout must be at least 1 second, got %s", d.ExecutionTimeout)
	}
	if d.RunTimeout < 0 || (d.RunTimeout > 0 && d.RunTimeout < time.Second) {
		return timeoutf("run timeout must be at least 1 second, got %s", d.RunTimeout)
	}
	if d.OnDeadline != "" {
		if err := validateHandlerName(d.OnDeadline); err != nil {
			return fmt.Errorf("on-deadline handler: %w", err)
		}
	}
	if d.OnCancel != "" {
		if err := validateHandlerName(d.OnCancel); err != nil {
			return fmt.Errorf("on-cancel handler: %w", err)
		}
	}
	if len(d.IdempotencyKey) > 191 {
		return invalidf("idempotency key is longer than 191 characters")
	}
	names := map[string]int{}
	delays := 0
	for i := range d.Steps {
		s := &d.Steps[i]
		if s.Name == "" {
			switch s.Type {
			case StepDelay:
				s.Name = "delay_" + strconv.Itoa(delays)
			case StepWaitForSignal:
				s.Name = "wait_for_" + s.Signal
			default:
				s.Name = strconv.Itoa(i)
			}
		}
		if s.Type == StepDelay {
			delays++
		}
		if len(s.Name) > 191 {
			return invalidf("step %d: name is longer than 191 characters", i)
		}
		if j, dup := names[s.Name]; dup {
			return invalidf("steps %d and %d have the same name %q", j, i, s.Name)
		}
		names[s.Name] = i
		if err := s.validate(i); err != nil {
			return err
		}
	}
	return nil
}

func (s *WorkflowStep) validate(i int) error {
	switch s.Type {
	case StepSingle:
		if err := validateHandlerName(s.Handler); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
		}
		if IsInternalHandler(s.Handler) {
			return invalidf("step %d (%s): handler names starting with __queuety_ are reserved", i, s.Name)
		}
	case StepParallel:
		if len(s.Handlers) == 0 {
			return invalidf("step %d (%s): parallel step has no handlers", i, s.Name)
		}
		for _, h := range s.Handlers {
			if err := validateHandlerName(h); err != nil {
				return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
			}
		}
	case StepDelay:
		if s.Delay < 0 {
			return invalidf("step %d (%s): sleep duration must not be negative, got %s", i, s.Name, s.Delay)
		}
	case StepWaitForSignal:
		if strings.TrimSpace(s.Signal) == "" {
			return invalidf("step %d (%s): signal name is empty", i, s.Name)
		}
		if s.Timeout < 0 || (s.Timeout > 0 && s.Timeout < time.Second) {
			return timeoutf("step %d (%s): signal timeout must be at least 1 second, got %s", i, s.Name, s.Timeout)
		}
	default:
		return invalidf("step %d: unknown step type %q", i, s.Type)
	}
	if s.Options.Delay < 0 {
		return invalidf("step %d (%s): delay must not be negative", i, s.Name)
	}
	if s.Options.DependsOn != 0 || s.Options.Unique {
		return invalidf("step %d (%s): DependsOn and Unique apply to plain jobs, not to workflow steps", i, s.Name)
	}
	if err := s.Options.Validate(); err != nil {
		return fmt.Errorf("step %d (%s): %w", i, s.Name, err)
	}
	return nil
}

// encode writes the step in Queuety's _steps shape, followed by its
// options in the keys Queuety's StepDispatchOptions reads (queue, priority,
// max_attempts, backoff, timeout_seconds) and the Go engine's timeout keys.
func (s *WorkflowStep) encode() *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("type", string(s.Type))
	o.Set("name", s.Name)
	switch s.Type {
	case StepSingle:
		o.Set("class", s.Handler)
	case StepParallel:
		hs := make([]any, len(s.Handlers))
		for i, h := range s.Handlers {
			hs[i] = h
		}
		o.Set("handlers", hs)
	case StepDelay:
		o.Set("delay_seconds", int64(math.Ceil(s.Delay.Seconds())))
		o.Set("compensation", nil)
	case StepWaitForSignal:
		o.Set("signal_name", s.Signal)
		o.Set("signal_names", []any{s.Signal})
		o.Set("wait_mode", "all")
		o.Set("result_key", nilIfEmpty(s.ResultKey))
		o.Set("match_payload", []any{})
		o.Set("correlation_key", nil)
		o.Set("human_wait", nil)
		o.Set("decision_map", nil)
		o.Set("compensation", nil)
		if s.Timeout > 0 {
			o.Set("timeout_ms", s.Timeout.Milliseconds())
		}
	}
	opt := s.Options
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
	rt := runtimeOptions{Backoff: opt.Backoff, Timeouts: opt.Timeouts}.encode()
	for _, k := range rt.Keys() {
		v, _ := rt.Get(k)
		o.Set(k, v)
	}
	return o
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// stepDef is a decoded _steps entry.
type stepDef struct {
	raw         *phpjson.Object
	Type        string
	Name        string
	Class       string
	Branches    []*phpjson.Object // parallel branches, each with "class"
	Delay       int64             // delay_seconds
	SignalNames []string
	WaitMode    string
	ResultKey   string
	Timeout     time.Duration
}

// handlers returns the handler names that run this step's jobs.
func (s *stepDef) handlers() []string {
	switch s.Type {
	case "parallel":
		out := make([]string, len(s.Branches))
		for i, b := range s.Branches {
			v, _ := b.Get("class")
			out[i], _ = v.(string)
		}
		return out
	case "single":
		return []string{s.Class}
	}
	return []string{placeholderHandler(s.Type)}
}

// placeholderHandler maps a step type to its internal handler.
func placeholderHandler(typ string) string {
	switch typ {
	case "delay":
		return HandlerDelay
	case "wait_for_signal":
		return HandlerWaitForSignal
	}
	return "__queuety_" + typ
}

// parseSteps decodes the _steps value of a state.
func parseSteps(state *phpjson.Object) ([]*stepDef, error) {
	raw, ok := state.Get("_steps")
	if !ok {
		return nil, errors.New("state has no _steps")
	}
	var items []any
	switch v := raw.(type) {
	case []any:
		items = v
	case *phpjson.Object: // index-keyed object form
		for _, k := range v.Keys() {
			e, _ := v.Get(k)
			items = append(items, e)
		}
	default:
		return nil, fmt.Errorf("_steps is %T, not a list", raw)
	}
	out := make([]*stepDef, len(items))
	for i, it := range items {
		d, err := parseStep(it, i)
		if err != nil {
			return nil, fmt.Errorf("_steps[%d]: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

func parseStep(v any, index int) (*stepDef, error) {
	if s, ok := v.(string); ok { // legacy: a bare class string
		o := phpjson.NewObject()
		o.Set("type", "single")
		o.Set("name", strconv.Itoa(index))
		o.Set("class", s)
		v = o
	}
	o, ok := v.(*phpjson.Object)
	if !ok {
		return nil, fmt.Errorf("step is %T, not an object", v)
	}
	d := &stepDef{raw: o, Type: strField(o, "type"), Name: strField(o, "name")}
	if d.Type == "" {
		d.Type = "single"
	}
	if d.Name == "" {
		d.Name = strconv.Itoa(index)
	}
	switch d.Type {
	case "single":
		d.Class = strField(o, "class")
		if d.Class == "" {
			return nil, errors.New("single step has no class")
		}
	case "parallel":
		d.Branches = parallelBranches(o)
		if len(d.Branches) == 0 {
			return nil, errors.New("parallel step has no handlers")
		}
	case "delay":
		d.Delay = intValue(o, "delay_seconds")
	case "wait_for_signal":
		d.SignalNames = strList(o, "signal_names")
		if len(d.SignalNames) == 0 {
			if s := strField(o, "signal_name"); s != "" {
				d.SignalNames = []string{s}
			}
		}
		d.WaitMode = strField(o, "wait_mode")
		if d.WaitMode == "" {
			d.WaitMode = "all"
		}
		d.ResultKey = strField(o, "result_key")
		d.Timeout = time.Duration(intValue(o, "timeout_ms")) * time.Millisecond
	}
	return d, nil
}

// parallelBranches normalises "branches" (objects or strings) or
// "handlers" into branch objects with a "class".
func parallelBranches(o *phpjson.Object) []*phpjson.Object {
	var out []*phpjson.Object
	if v, ok := o.Get("branches"); ok {
		if list, ok := v.([]any); ok {
			for _, b := range list {
				switch x := b.(type) {
				case string:
					if strings.TrimSpace(x) != "" {
						bo := phpjson.NewObject()
						bo.Set("class", strings.TrimSpace(x))
						out = append(out, bo)
					}
				case *phpjson.Object:
					h := strField(x, "class")
					if h == "" {
						h = strField(x, "handler")
					}
					if h != "" {
						bo := x.Clone()
						bo.Set("class", h)
						out = append(out, bo)
					}
				}
			}
			return out
		}
	}
	if v, ok := o.Get("handlers"); ok {
		if list, ok := v.([]any); ok {
			for _, h := range list {
				if s, ok := h.(string); ok && strings.TrimSpace(s) != "" {
					bo := phpjson.NewObject()
					bo.Set("class", strings.TrimSpace(s))
					out = append(out, bo)
				}
			}
		}
	}
	return out
}

func strField(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// strList returns the non-empty strings of the list at k.
func strList(o *phpjson.Object, k string) []string {
	v, _ := o.Get(k)
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// DispatchWorkflow validates def and starts a workflow with the initial
// state (a State, map or struct encoding as a JSON object). In one
// transaction it writes the workflow row, the first step's job(s) and the
// workflow_started log, all in Queuety's format. With an idempotency key
// that was used before, it returns the existing workflow's id and writes
// nothing. Invalid definitions return an error wrapping ErrInvalidArgument
// or ErrInvalidTimeout.
func (c *Client) DispatchWorkflow(ctx context.Context, def WorkflowDefinition, initial any) (int64, error) {
	p, err := prepareWorkflow(def, initial)
	if err != nil {
		return 0, err
	}
	var id int64
	for range 3 {
		err = c.store.InTx(ctx, func(tx driver.Tx) (err error) {
			id, err = c.engine.insertWorkflow(ctx, tx, p, c.clock.Now())
			return err
		})
		if errors.Is(err, driver.ErrDuplicate) && p.def.IdempotencyKey != "" {
			continue // a concurrent dispatch won the key: read it on the next pass
		}
		break
	}
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", p.def.Name, err)
	}
	return id, nil
}

// preparedWorkflow is a validated definition with its initial state
// encoded, ready to insert.
type preparedWorkflow struct {
	def          WorkflowDefinition
	state        *phpjson.Object
	stateJSON    []byte
	steps        []*stepDef
	queue        string
	deadlineSecs int64
}

// runtimeDefinition starts Queuety's runtime definition of def
// (build_runtime_definition), with its steps already encoded: the keys
// shared by the definition hash and stored workflow schedules.
func runtimeDefinition(def WorkflowDefinition, steps []any) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("name", def.Name)
	o.Set("steps", steps)
	o.Set("queue", orDefault(def.Queue, DefaultQueue))
	o.Set("priority", int64(def.Priority))
	o.Set("max_attempts", int64(orDefaultInt(def.MaxAttempts, DefaultMaxAttempts)))
	o.Set("cancel_handler", nilIfEmpty(def.OnCancel))
	o.Set("prune_after", nil)
	if def.ExecutionTimeout > 0 {
		o.Set("deadline_seconds", int64(math.Ceil(def.ExecutionTimeout.Seconds())))
	} else {
		o.Set("deadline_seconds", nil)
	}
	o.Set("deadline_handler", nilIfEmpty(def.OnDeadline))
	o.Set("definition_version", nilIfEmpty(def.Version))
	return o
}

// prepareWorkflow validates def and builds the stored state: the initial
// keys, then Queuety's private keys in Queuety's order.
func prepareWorkflow(def WorkflowDefinition, initial any) (*preparedWorkflow, error) {
	def, err := def.normalized()
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch workflow: %w", err)
	}
	state, err := toObject("initial state", initial)
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	for _, k := range state.Keys() {
		if isPrivateKey(k) {
			return nil, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, invalidf("initial state key %q starts with _, which is reserved", k))
		}
	}
	queue := orDefault(def.Queue, DefaultQueue)
	maxAttempts := orDefaultInt(def.MaxAttempts, DefaultMaxAttempts)
	deadlineSecs := int64(math.Ceil(def.ExecutionTimeout.Seconds()))

	steps := make([]any, len(def.Steps))
	for i := range def.Steps {
		steps[i] = def.Steps[i].encode()
	}
	hashDoc := runtimeDefinition(def, steps)
	hashDoc.Set("max_transitions", nil)
	hashDoc.Set("max_for_each_items", nil)
	hashDoc.Set("max_state_bytes", nil)
	hashDoc.Set("compensate_on_failure", false)
	sum := sha256.Sum256(encodeJSON(hashDoc))

	state.Set("_steps", steps)
	state.Set("_queue", queue)
	state.Set("_priority", int64(def.Priority))
	state.Set("_max_attempts", int64(maxAttempts))
	state.Set("_definition_hash", hex.EncodeToString(sum[:]))
	if def.OnCancel != "" {
		state.Set("_on_cancel", def.OnCancel)
	}
	if deadlineSecs > 0 {
		state.Set("_deadline_seconds", deadlineSecs)
	}
	if def.OnDeadline != "" {
		state.Set("_on_deadline", def.OnDeadline)
	}
	if def.Version != "" {
		state.Set("_definition_version", def.Version)
	}
	if def.IdempotencyKey != "" {
		state.Set("_idempotency_key", def.IdempotencyKey)
	}
	if def.RunTimeout > 0 {
		state.Set(runTimeoutKey, int64(math.Ceil(def.RunTimeout.Seconds())))
	}
	stateJSON, err := phpjson.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, invalidf("state does not encode as JSON: %v", err))
	}
	parsed, err := parseSteps(state)
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	return &preparedWorkflow{def: def, state: state, stateJSON: stateJSON, steps: parsed, queue: queue, deadlineSecs: deadlineSecs}, nil
}

// insertWorkflow writes a prepared workflow inside tx: the workflow row,
// its idempotency key, the first step's job(s) and the workflow_started
// log. With a known idempotency key it returns the existing id and writes
// nothing; a key inserted concurrently surfaces as ErrDuplicate.
func (e *Engine) insertWorkflow(ctx context.Context, tx driver.Tx, p *preparedWorkflow, now time.Time) (int64, error) {
	def := p.def
	if def.IdempotencyKey != "" {
		existing, err := tx.DispatchKeyGet(ctx, def.IdempotencyKey)
		if err != nil || existing != 0 {
			return existing, err
		}
	}
	wf := &driver.Workflow{
		Name: def.Name, Status: WorkflowRunning, State: p.stateJSON, TotalSteps: len(def.Steps),
		StartedAt: floorSecond(now), RunNumber: 1, RunStartedAt: now,
	}
	if p.deadlineSecs > 0 {
		wf.DeadlineAt = ceilSecond(now).Add(time.Duration(p.deadlineSecs) * time.Second)
	}
	setRunDeadline(wf, p.state, now)
	if err := tx.WorkflowInsert(ctx, wf); err != nil {
		return 0, err
	}
	if def.IdempotencyKey != "" {
		if err := tx.DispatchKeyInsert(ctx, def.IdempotencyKey, wf.ID, now); err != nil {
			return 0, err
		}
	}
	if err := e.enqueueStep(ctx, tx, wf, p.state, p.steps, 0, now); err != nil {
		return 0, err
	}
	err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: def.Name, Queue: p.queue, Event: driver.LogWorkflowStarted, CreatedAt: now}})
	return wf.ID, err
}

// setRunDeadline starts a run's clock: run start + run timeout, capped at
// the execution deadline.
func setRunDeadline(wf *driver.Workflow, state *phpjson.Object, now time.Time) {
	wf.RunStartedAt = now
	wf.RunDeadlineAt = time.Time{}
	secs := intValue(state, runTimeoutKey)
	if secs <= 0 {
		return
	}
	d := now.Add(time.Duration(secs) * time.Second)
	if !wf.DeadlineAt.IsZero() && wf.DeadlineAt.Before(d) {
		d = wf.DeadlineAt
	}
	wf.RunDeadlineAt = d
}

// workflowExpired returns the timeout kind that has passed for a
// non-terminal workflow at now, or "". The execution deadline wins when
// both have passed.
func workflowExpired(wf *driver.Workflow, now time.Time) TimeoutKind {
	if wf.Status.Terminal() {
		return ""
	}
	if !wf.DeadlineAt.IsZero() && !now.Before(wf.DeadlineAt) {
		return TimeoutExecution
	}
	if !wf.RunDeadlineAt.IsZero() && !now.Before(wf.RunDeadlineAt) {
		return TimeoutRun
	}
	return ""
}
