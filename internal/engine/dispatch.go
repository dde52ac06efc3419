package engine

import (
	"github.com/queuety/queuety-go/internal/dispatch"
)

// Dispatcher returns the engine's dispatches: jobs, batches, chains and
// workflows written in one transaction, with unique jobs and idempotency
// keys (package internal/dispatch).
func (e *Engine) Dispatcher() *dispatch.Service { return e.dispatcher }

// newDispatcher builds the dispatches of e's store, with the transition
// that enqueues a new workflow's first step.
func (e *Engine) newDispatcher() *dispatch.Service {
	return dispatch.New(e.store, dispatch.Config{
		Clock: e.clock, Observer: e.obs, NoteJobs: e.noteJobs, EnqueueStep: e.enqueueStep, Batches: e.batches,
	})
}

// Definition is a workflow definition in the engine's terms (see
// dispatch.Definition).
type Definition = dispatch.Definition
