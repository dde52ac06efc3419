package queuety

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// JobFunc handles a plain job. The payload has the engine's reserved keys
// removed. Returning an error fails the attempt; wrap it with NonRetryable
// to skip the remaining attempts. Honour ctx: it ends at the start-to-close
// deadline and when the worker shuts down.
type JobFunc func(ctx context.Context, payload Payload) error

// StepFunc handles one workflow step. It receives the workflow's public
// state (no "_" keys) and returns the keys to merge into it (a shallow,
// top-level merge). A nil State merges nothing. Return
// State{"_next_step": "name"} to jump to a named step.
type StepFunc func(ctx context.Context, state State) (State, error)

// CallbackFunc handles a workflow's deadline or cancel callback
// (OnDeadline, OnCancel). It receives the workflow's public state at the
// time the workflow failed or was cancelled. Its error is logged and does
// not change the workflow, and it is not retried. If the worker running
// it dies, stale recovery hands its job back and it runs again (up to 3
// attempts), so under a crash it runs at least once.
type CallbackFunc func(ctx context.Context, state State) error

// ForEachFunc handles one branch of a for-each step: item is the branch's
// element of the step's items list (a JSON value) and index its position.
// It receives the workflow's public state and returns the branch's output,
// which the step's aggregate records (ForEachResult). Errors fail the
// branch's attempt, as for a StepFunc.
type ForEachFunc func(ctx context.Context, state State, item any, index int) (State, error)

// ForEachItemFunc handles one branch of a for-each step as ForEachFunc
// does, without the workflow's state (registered with HandleForEachItem).
type ForEachItemFunc func(ctx context.Context, item any, index int) (State, error)

// ReducerFunc turns a settled for-each step's aggregate into the keys to
// merge into the workflow's public state (registered with HandleReducer).
// It receives the state as it was when the step settled.
type ReducerFunc func(ctx context.Context, state State, result queuetytype.ForEachResult) (State, error)

// RepeatConditionFunc decides a repeat step from the workflow's public
// state (registered with HandleRepeatCondition): true means the condition
// holds.
type RepeatConditionFunc func(ctx context.Context, state State) (bool, error)

// Registry maps handler names to handlers. Names are the strings stored in
// jobs.handler, so PHP class names ("App\\Steps\\FetchData") work as
// names. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	jobs      map[string]JobFunc
	steps     map[string]StepFunc
	callbacks map[string]CallbackFunc
	forEach   map[string]ForEachFunc
	// forEachItems holds the for-each handlers that take no state
	// (HandleForEachItem); forEach holds them too, behind a ForEachFunc.
	forEachItems map[string]ForEachItemFunc
	reducers     map[string]ReducerFunc
	conditions   map[string]RepeatConditionFunc
	// batchCallbacks names the job handlers that are batch callbacks or
	// chain catch handlers (batch.go).
	batchCallbacks map[string]bool
	// middleware wraps every handler (Use); handlerMiddleware wraps one
	// handler each (UseFor).
	middleware        []Middleware
	handlerMiddleware map[string][]Middleware
	// defaults and buried are the handlers' job defaults and bury hooks
	// (defaults.go).
	defaults map[string][]JobOption
	buried   map[string]func(context.Context, *queuetytype.Job, error)
	// machineActions and machineGuards are the state machine handlers
	// (machine.go).
	machineActions map[string]MachineActionFunc
	machineGuards  map[string]MachineGuardFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		jobs: map[string]JobFunc{}, steps: map[string]StepFunc{}, callbacks: map[string]CallbackFunc{},
		forEach: map[string]ForEachFunc{}, forEachItems: map[string]ForEachItemFunc{}, reducers: map[string]ReducerFunc{}, conditions: map[string]RepeatConditionFunc{},
	}
}

// HandleJob registers a plain-job handler. It panics on an empty name, a
// nil function or a name registered twice, since those are programming
// errors.
func (r *Registry) HandleJob(name string, fn JobFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.jobs[name] = fn
}

// HandleStep registers a workflow step handler (see HandleJob for panics).
func (r *Registry) HandleStep(name string, fn StepFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.steps[name] = fn
}

// HandleDeadline registers a deadline or cancel callback under the name
// given to the builder's OnDeadline or OnCancel (see HandleJob for
// panics). The engine runs it once per failed or cancelled workflow, as a
// job on the workflow's queue, so only workers that have it run it; a
// worker that dies while running it leaves it to run again (see
// CallbackFunc).
func (r *Registry) HandleDeadline(name string, fn CallbackFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.callbacks[name] = fn
}

// HandleForEach registers the branch handler of for-each steps (see
// HandleJob for panics). Workers claim its branch jobs by this name.
func (r *Registry) HandleForEach(name string, fn ForEachFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.forEach[name] = fn
}

// HandleForEachItem registers the branch handler of for-each steps as
// HandleForEach does, for a handler that needs only its item: a worker
// then does not copy the workflow's state for it (the state holds the
// step's whole item list), and a middleware's Invocation.State is nil.
func (r *Registry) HandleForEachItem(name string, fn ForEachItemFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.forEachItems[name] = fn
	r.forEach[name] = func(ctx context.Context, _ State, item any, index int) (State, error) {
		return fn(ctx, item, index)
	}
}

// HandleReducer registers a for-each reducer under the name given to the
// builder's Reducer option (see HandleJob for panics). The engine calls
// it when the step settles; it is not a job handler of its own.
func (r *Registry) HandleReducer(name string, fn ReducerFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.reducers[name] = fn
}

// HandleRepeatCondition registers a repeat condition under the name given
// to the builder's ConditionNamed (see HandleJob for panics). The engine
// calls it when the repeat step runs; it is not a job handler of its own.
func (r *Registry) HandleRepeatCondition(name string, fn RepeatConditionFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.conditions[name] = fn
}

// HandleCompensation registers a compensation handler under the name given
// to the builder's CompensateWith (Queuety's Compensation classes). It
// receives the workflow's public state as it was right after the step it
// undoes, and runs as a job with the workflow's attempts; its error fails
// that attempt (see HandleJob for panics).
func (r *Registry) HandleCompensation(name string, fn CallbackFunc) { r.HandleDeadline(name, fn) }

func (r *Registry) checkNew(name string, nilFn bool) {
	if err := dispatch.ValidateHandlerName(name); err != nil {
		panic(fmt.Sprintf("queuety: register handler: %v", err))
	}
	if nilFn {
		panic("queuety: register handler " + name + ": nil function")
	}
	if engine.IsInternalHandler(name) {
		panic("queuety: register handler " + name + ": names starting with __queuety_ are reserved")
	}
	_, a := r.jobs[name]
	_, b := r.steps[name]
	_, c := r.callbacks[name]
	_, d := r.forEach[name]
	_, e := r.reducers[name]
	_, f := r.conditions[name]
	if a || b || c || d || e || f {
		panic("queuety: handler " + name + " registered twice")
	}
}

// Job returns the plain-job handler for name.
func (r *Registry) Job(name string) (JobFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.jobs[name]
	return fn, ok
}

// Step returns the step handler for name.
func (r *Registry) Step(name string) (StepFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.steps[name]
	return fn, ok
}

// Callback returns the deadline/cancel callback for name.
func (r *Registry) Callback(name string) (CallbackFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.callbacks[name]
	return fn, ok
}

// ForEach returns the for-each branch handler for name.
func (r *Registry) ForEach(name string) (ForEachFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.forEach[name]
	return fn, ok
}

// ForEachItem returns the for-each branch handler registered for name
// with HandleForEachItem.
func (r *Registry) ForEachItem(name string) (ForEachItemFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.forEachItems[name]
	return fn, ok
}

// Reducer returns the for-each reducer registered for name.
func (r *Registry) Reducer(name string) (ReducerFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.reducers[name]
	return fn, ok
}

// RepeatCondition returns the repeat condition registered for name.
func (r *Registry) RepeatCondition(name string) (RepeatConditionFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.conditions[name]
	return fn, ok
}

// Names returns the names a worker claims jobs for, sorted: job, step,
// for-each and callback handlers. Reducers and repeat conditions run
// inside the engine and are not listed.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for n := range r.jobs {
		out = append(out, n)
	}
	for n := range r.steps {
		out = append(out, n)
	}
	for n := range r.callbacks {
		out = append(out, n)
	}
	for n := range r.forEach {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
