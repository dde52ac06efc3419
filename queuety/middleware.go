package queuety

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// HandlerKind says which kind of registered handler an Invocation calls.
type HandlerKind string

// The handler kinds a worker invokes.
const (
	KindJob      HandlerKind = "job"      // a JobFunc, for a plain job (or a step registered as a job)
	KindStep     HandlerKind = "step"     // a StepFunc
	KindForEach  HandlerKind = "for_each" // a ForEachFunc, for one for-each branch
	KindCallback HandlerKind = "callback" // a CallbackFunc: deadline, cancel or compensation handler
)

// Invocation is one call of a registered handler by a worker: what the
// handler is about to receive, and the attempt it runs in. Middleware
// reads it, and may change Payload, State or Item before calling next:
// the handler receives the Invocation's values.
type Invocation struct {
	// Client is the client of the worker running the handler.
	Client *Client
	// Job describes the attempt (as JobInfoFrom(ctx) does).
	Job queuetytype.JobInfo
	// Kind says which handler runs and which fields below are set.
	Kind HandlerKind
	// Payload is the job's payload (KindJob, KindCallback).
	Payload Payload
	// State is the workflow's public state (KindStep, KindForEach; nil for
	// a handler registered with HandleForEachItem).
	State State
	// Item and Index are the for-each branch's element and position
	// (KindForEach).
	Item  any
	Index int
}

// Handler runs an Invocation: at the core the registered handler, around
// it the middleware. For steps and for-each branches the State it returns
// is the output to merge; jobs and callbacks return nil.
type Handler func(ctx context.Context, inv *Invocation) (State, error)

// Middleware wraps a Handler, in the manner of Queuety's middleware
// pipeline: it can act before and after calling next, change the
// Invocation, return an error instead of calling next (failing the
// attempt), return Release(d) to hand the job back, or return nil without
// calling next (the job then completes without running). Register it for
// all handlers with Registry.Use or worker.Worker.Use, or for one handler
// with UseFor.
type Middleware func(next Handler) Handler

// Use adds middleware that wraps every handler invocation by the workers
// using this registry. Middleware runs in the order added, the first one
// outermost, and outside the per-handler middleware of UseFor (as
// Queuety's pipeline runs a middleware() list: first is outermost). The
// engine's internal steps (delays, signal waits, fan-out bookkeeping) run
// no middleware.
func (r *Registry) Use(mw ...Middleware) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range mw {
		if m == nil {
			panic("queuety: Use: nil middleware")
		}
	}
	r.middleware = append(r.middleware, mw...)
}

// UseFor adds middleware for the handler registered (or to be registered)
// under name, Queuety's per-job middleware() list: it runs inside the
// middleware of Use, in the order added, the first one outermost.
func (r *Registry) UseFor(name string, mw ...Middleware) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range mw {
		if m == nil {
			panic("queuety: UseFor " + name + ": nil middleware")
		}
	}
	if r.handlerMiddleware == nil {
		r.handlerMiddleware = map[string][]Middleware{}
	}
	r.handlerMiddleware[name] = append(r.handlerMiddleware[name], mw...)
}

// Wrap returns core wrapped in the middleware that applies to the handler
// named name: those of Use outermost, then those of UseFor. With none it
// returns core itself. Workers call it for every invocation.
func (r *Registry) Wrap(name string, core Handler) Handler {
	r.mu.RLock()
	chain := make([]Middleware, 0, len(r.middleware)+len(r.handlerMiddleware[name]))
	chain = append(append(chain, r.middleware...), r.handlerMiddleware[name]...)
	r.mu.RUnlock()
	h := core
	for i := len(chain) - 1; i >= 0; i-- {
		h = chain[i](h)
	}
	return h
}

// HasMiddleware reports whether any middleware applies to the handler
// named name.
func (r *Registry) HasMiddleware(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.middleware) > 0 || len(r.handlerMiddleware[name]) > 0
}

// ReleaseError is what Release returns: the worker hands the job back,
// due again after Delay, instead of recording the attempt.
type ReleaseError struct {
	Delay time.Duration // wait before the job is due again; 0 or less: at once
	// Reason says why, for logs (optional).
	Reason string
}

// Error says the job was released.
func (e *ReleaseError) Error() string {
	msg := fmt.Sprintf("queuety: job released, due again in %s", e.Delay)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Release returns an error that makes the worker hand the job back to its
// queue, due again after delay (whole seconds, rounded up, as Queuety
// stores due times), without recording a failure and without using an
// attempt. Middleware such as WithoutOverlapping returns it when the job
// cannot run yet; a handler may return it too. A job released over and
// over never fails, so give up at some point if the cause can persist.
func Release(delay time.Duration) error { return &ReleaseError{Delay: delay} }
