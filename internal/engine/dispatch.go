package engine

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Dispatcher returns the engine's dispatches: jobs, batches, chains and
// workflows written in one transaction, with unique jobs and idempotency
// keys (package internal/dispatch).
func (e *Engine) Dispatcher() *dispatch.Service { return e.dispatcher }

// newDispatcher builds the dispatches of e's store, with the transition
// that enqueues a new workflow's first step.
func (e *Engine) newDispatcher() *dispatch.Service {
	return dispatch.New(e.store, dispatch.Config{
		Clock: e.clock, Observer: e.obs, Wake: e.wake, EnqueueStep: e.enqueueStep, Batches: e.batches,
	})
}

// Definition is a workflow definition in the engine's terms (see
// dispatch.Definition).
type Definition = dispatch.Definition

// preparedWorkflow is a definition with its initial state encoded, ready
// to insert.
type preparedWorkflow = dispatch.Prepared

// prepareWorkflow builds a workflow's stored state (see dispatch.Prepare).
func prepareWorkflow(def Definition, state *phpjson.Object) (*preparedWorkflow, error) {
	return dispatch.Prepare(def, state)
}

// insertWorkflow writes a prepared workflow inside tx (see
// dispatch.Service.InsertWorkflow).
func (e *Engine) insertWorkflow(ctx context.Context, tx driver.Tx, p *preparedWorkflow, now time.Time) (int64, error) {
	return e.dispatcher.InsertWorkflow(ctx, tx, p, now)
}

// DefinitionFromRuntime reads a runtime definition (see
// dispatch.DefinitionFromRuntime).
func DefinitionFromRuntime(o *phpjson.Object) (Definition, error) {
	return dispatch.DefinitionFromRuntime(o)
}

// setRunDeadline starts a run's clock (see dispatch.StartRun).
func setRunDeadline(wf *driver.Workflow, state *phpjson.Object, now time.Time) {
	dispatch.StartRun(wf, state, now)
}

// handlerDefinition is Queuety's stored form of a callback handler.
func handlerDefinition(class string) *phpjson.Object { return dispatch.HandlerDefinition(class) }

// applyScheduleDeadlines sets the deadlines that start at scheduling.
func applyScheduleDeadlines(job *driver.Job, t ActivityTimeouts, now time.Time) {
	dispatch.ApplyScheduleDeadlines(job, t, now)
}
