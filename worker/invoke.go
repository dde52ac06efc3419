package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Use adds middleware around every handler this worker runs (see
// queuety.Registry.Use, on the worker's registry). Add middleware before
// Run or RunOnce.
func (w *Worker) Use(mw ...queuety.Middleware) { w.reg.Use(mw...) }

// UseFor adds middleware around the handler registered under name (see
// queuety.Registry.UseFor).
func (w *Worker) UseFor(name string, mw ...queuety.Middleware) { w.reg.UseFor(name, mw...) }

// DispatchSync runs the job handler registered under handler on this
// worker now, in the calling goroutine, as Queuety's dispatch_sync does:
// no rows, no middleware, the handler's error returned (see
// queuety.Registry.DispatchSync).
func (w *Worker) DispatchSync(ctx context.Context, handler string, payload any) error {
	return w.reg.DispatchSync(ctx, handler, payload)
}

// call runs the registered handler of cj through its middleware, turning
// a panic (in the handler or a middleware) into a PanicError.
func (w *Worker) call(ctx context.Context, cj *engine.Claimed) (out queuety.State, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &queuetytype.PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	if err := cj.Err(); err != nil {
		return nil, err
	}
	name := cj.Job.Handler
	if cj.IsStep() && engine.IsInternalHandler(name) {
		return nil, nil // the engine runs internal steps when it records the result
	}
	inv, core, err := w.resolve(cj)
	if err != nil {
		return nil, err
	}
	inv.Client = w.c
	inv.Job, _ = queuety.JobInfoFrom(ctx) // Attach put cj.Info() there
	if !w.reg.HasMiddleware(name) {
		return w.timed(core)(ctx, inv)
	}
	return w.timed(w.reg.Wrap(name, core))(ctx, inv)
}

// resolve finds the handler of cj and returns the Invocation it receives
// and the core Handler that calls it with the Invocation's values.
func (w *Worker) resolve(cj *engine.Claimed) (*queuety.Invocation, queuety.Handler, error) {
	name := cj.Job.Handler
	notFound := func() error { return queuety.NonRetryable(&queuetytype.HandlerNotFoundError{Name: name}) }
	if cj.IsStep() {
		if item, index, ok := cj.ForEachItem(); ok {
			if fn, found := w.reg.ForEachItem(name); found {
				// The handler takes no state: none is copied for it.
				return &queuety.Invocation{Kind: queuety.KindForEach, Item: item, Index: index},
					func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
						return fn(ctx, inv.Item, inv.Index)
					}, nil
			}
			fn, found := w.reg.ForEach(name)
			if !found {
				return nil, nil, notFound()
			}
			inv := &queuety.Invocation{Kind: queuety.KindForEach, State: cj.State(), Item: item, Index: index}
			return inv, func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
				return fn(ctx, inv.State, inv.Item, inv.Index)
			}, nil
		}
		if fn, ok := w.reg.Step(name); ok {
			return &queuety.Invocation{Kind: queuety.KindStep, State: cj.State()},
				func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) { return fn(ctx, inv.State) }, nil
		}
		if fn, ok := w.reg.Job(name); ok {
			return &queuety.Invocation{Kind: queuety.KindJob, Payload: cj.Payload()}, jobCore(fn), nil
		}
		return nil, nil, notFound()
	}
	if fn, ok := w.reg.Callback(name); ok {
		return &queuety.Invocation{Kind: queuety.KindCallback, Payload: cj.Payload()},
			func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
				return nil, fn(ctx, inv.Payload)
			}, nil
	}
	if fn, ok := w.reg.Job(name); ok {
		return &queuety.Invocation{Kind: queuety.KindJob, Payload: cj.Payload()}, jobCore(fn), nil
	}
	if _, ok := w.reg.Step(name); ok {
		return nil, nil, queuety.NonRetryable(fmt.Errorf("handler %q is a step handler, but job %d is not a workflow step", name, cj.Job.ID))
	}
	return nil, nil, notFound()
}

func jobCore(fn queuety.JobFunc) queuety.Handler {
	return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
		return nil, fn(ctx, inv.Payload)
	}
}

// released hands cj back when err asks for it (queuety.Release): due again
// after the release delay, without using an attempt. It reports whether
// it did; the caller then records nothing.
func (w *Worker) released(cj *engine.Claimed, err error) bool {
	if err == nil {
		return false
	}
	var re *queuety.ReleaseError
	if !errors.As(err, &re) {
		return false
	}
	if derr := w.engine.Defer(context.Background(), cj, re.Delay); derr != nil {
		w.log.Error("queuety: release job (stale recovery will return it)", "job_id", cj.Job.ID, "err", derr)
	} else {
		w.stats.handedBack.Add(1)
		w.log.Debug("queuety: job released", "job_id", cj.Job.ID, "handler", cj.Job.Handler, "delay", re.Delay, "reason", re.Reason)
	}
	if h := w.cfg.hooks.Finished; h != nil {
		h(cj.Job, err)
	}
	return true
}
