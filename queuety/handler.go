package queuety

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/queuety/queuety-go/internal/engine"
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
// not change the workflow.
type CallbackFunc func(ctx context.Context, state State) error

// Registry maps handler names to handlers. Names are the strings stored in
// jobs.handler, so PHP class names ("App\\Steps\\FetchData") work as
// names. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	jobs      map[string]JobFunc
	steps     map[string]StepFunc
	callbacks map[string]CallbackFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{jobs: map[string]JobFunc{}, steps: map[string]StepFunc{}, callbacks: map[string]CallbackFunc{}}
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
// job on the workflow's queue, so only workers that have it run it.
func (r *Registry) HandleDeadline(name string, fn CallbackFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkNew(name, fn == nil)
	r.callbacks[name] = fn
}

func (r *Registry) checkNew(name string, nilFn bool) {
	if err := engine.ValidateHandlerName(name); err != nil {
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
	if a || b || c {
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

// Names returns every registered name, sorted.
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
	sort.Strings(out)
	return out
}
