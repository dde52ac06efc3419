package queuety

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// DispatchSync runs the job handler registered under handler now, in the
// calling goroutine, with payload (a State, map or struct encoding as a
// JSON object; nil for none), and returns its error. It is Queuety's
// Queuety::dispatch_sync: nothing is written to the database (no job row,
// no log rows), no middleware runs, there are no retries, and a panic in
// the handler reaches the caller as it would from a direct call.
//
// The handler sees the payload as a worker would hand it over (encoded as
// the job row would store it and decoded again). ctx is passed through as
// it is: JobInfoFrom(ctx) reports no attempt, and Heartbeat returns
// ErrNoAttempt.
//
// Job handlers (HandleJob) and callbacks (HandleDeadline,
// HandleCompensation) can run this way. An unknown name returns a
// *HandlerNotFoundError ("Handler not found: <name>", Queuety's message);
// a step or for-each handler, which needs a workflow, returns an error
// wrapping ErrInvalidArgument. Invalid payloads return an error wrapping
// ErrInvalidArgument and the handler does not run.
func (r *Registry) DispatchSync(ctx context.Context, handler string, payload any) error {
	doc, err := workflowstate.ToObject("payload", payload)
	if err != nil {
		return err
	}
	p, err := engine.SyncPayload(doc)
	if err != nil {
		return err
	}
	if fn, ok := r.Job(handler); ok {
		return fn(ctx, p)
	}
	if fn, ok := r.Callback(handler); ok {
		return fn(ctx, p)
	}
	_, step := r.Step(handler)
	_, forEach := r.ForEach(handler)
	if step || forEach {
		return fmt.Errorf("%w: handler %q is a workflow step handler; DispatchSync runs job handlers", queuetytype.ErrInvalidArgument, handler)
	}
	return &queuetytype.HandlerNotFoundError{Name: handler}
}
