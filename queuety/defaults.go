package queuety

import (
	"context"

	"github.com/queuety/queuety-go/queuetytype"
)

// Defaults sets the job options that apply to jobs of the handler named
// name when their dispatch does not set them, as Queuety PHP applies a
// handler's config() (queue, max_attempts, backoff, rate_limit,
// concurrency_group and concurrency_limit, cost_units): the defaults are
// applied first, then the dispatch's own options, so an option the
// dispatch gives wins. Later calls for the same name add to (and, option
// by option, override) earlier ones.
//
// A client applies them when it was opened with WithRegistry(r): in
// Dispatch, DispatchMany, DispatchTx, DispatchManyTx and the jobs of
// batches and chains. The options are written into the job's row, so
// every worker, Queuety PHP's included, runs the job with them. Workflow
// steps are dispatched by the engine and do not take them; the jobs of a
// state machine's entry action take the concurrency group and limit and
// the cost units set for the action's name (see HandleMachineAction).
func (r *Registry) Defaults(name string, opts ...JobOption) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.defaults == nil {
		r.defaults = map[string][]JobOption{}
	}
	for _, o := range opts {
		if o != nil {
			r.defaults[name] = append(r.defaults[name], o)
		}
	}
}

// DefaultsOf returns the job options Defaults set for name, in order.
func (r *Registry) DefaultsOf(name string) []JobOption {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]JobOption(nil), r.defaults[name]...)
}

// OnBuried sets the hook of the handler named name that a worker calls
// when it buries one of its jobs (the attempts are used up, or the error
// is non-retryable): Queuety PHP's failed() method of a handler. It gets
// the job as it was claimed and the error of the last attempt. The worker
// calls it once, after the transaction that buried the job committed, on
// the goroutine that ran the job (which keeps its slot until the hook
// returns), with a panic recovered and logged; the hook never fails or
// retries the job. A job buried by an operator or by stale recovery does
// not call it. ctx is not the handler's (that one ended):
// it carries no deadline, so the hook should bound its own work. A second
// call for the same name replaces the hook; a nil fn removes it.
func (r *Registry) OnBuried(name string, fn func(ctx context.Context, job *queuetytype.Job, err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buried == nil {
		r.buried = map[string]func(context.Context, *queuetytype.Job, error){}
	}
	if fn == nil {
		delete(r.buried, name)
		return
	}
	r.buried[name] = fn
}

// BuriedHook returns the hook OnBuried set for name.
func (r *Registry) BuriedHook(name string) (func(ctx context.Context, job *queuetytype.Job, err error), bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.buried[name]
	return fn, ok
}

// WithRegistry makes the client apply the handler defaults of r
// (Registry.Defaults) to the jobs it dispatches, and run the state machine
// guards of r (Registry.HandleMachineGuard) in MachineEvent and
// FireMachineTimeouts. A worker on the client that is given no registry of
// its own uses r.
func WithRegistry(r *Registry) Option { return func(c *config) { c.registry = r } }

// Registry returns the registry given to WithRegistry, or nil.
func (c *Client) Registry() *Registry { return c.registry }

// spec resolves the options of a job of handler: the registry's defaults
// first, then opts.
func (c *Client) spec(handler string, opts []JobOption) queuetytype.JobSpec {
	if c.registry == nil {
		return ResolveJobOptions(opts...)
	}
	defs := c.registry.DefaultsOf(handler)
	if len(defs) == 0 {
		return ResolveJobOptions(opts...)
	}
	return ResolveJobOptions(append(defs, opts...)...)
}
