package queuetytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// stepHandler is the name RunStep registers the step under.
const stepHandler = "queuetytest_step"

// RunStep runs one step handler the way a workflow runs it, and returns
// the workflow's public state afterwards: state (a State, map or struct
// encoding as a JSON object) with the handler's output merged in. On a kit
// of its own it dispatches a workflow whose only step is fn, with one
// attempt, and runs it, so the handler sees what it sees in production:
// the state after a JSON round trip (integers as int64, structs as maps, no
// "_" keys) and a context with its queuety.JobInfo, where Heartbeat works.
// Output keys starting with "_" are dropped, as the engine drops them.
//
// The error is the one fn returned (a queuety.ContinueAsNew included,
// which RunStep does not follow), or the workflow's failure when the
// engine rejected the output, for example a "_next_step" naming a step
// the one-step workflow does not have. Store errors fail t.
func RunStep(ctx context.Context, t testing.TB, fn queuety.StepFunc, state any) (queuety.State, error) {
	t.Helper()
	kit := New(t)
	var (
		mu      sync.Mutex
		stepErr error
	)
	kit.HandleStep(stepHandler, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		out, err := fn(ctx, s)
		if err != nil {
			mu.Lock()
			stepErr = err
			mu.Unlock()
			var can *queuetytype.ContinueAsNewError
			if errors.As(err, &can) {
				return nil, queuety.NonRetryable(errors.New("continue-as-new is not followed by RunStep"))
			}
		}
		return out, err
	})
	def := queuety.WorkflowDefinition{Name: stepHandler, MaxAttempts: 1,
		Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: stepHandler}}}
	id, err := kit.Client().DispatchWorkflow(ctx, def, state)
	if err != nil {
		return nil, fmt.Errorf("queuetytest: RunStep: %w", err)
	}
	r := kit.RunWorkflow(ctx, id)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case stepErr != nil:
		return nil, stepErr
	case r.Stop != StopCompleted:
		return nil, fmt.Errorf("queuetytest: RunStep: the step's workflow stopped: %s", r)
	}
	return r.State, nil
}
