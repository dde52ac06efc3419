package engine

import (
	"sync"
	"weak"
)

// WorkerHandlers is what one worker of this process runs, as far as the
// engine needs to know when it expires workflows and settles batches.
type WorkerHandlers struct {
	// Callback reports the deadline and cancel callbacks it has.
	Callback func(name string) bool
	// BatchCallback reports the batch callbacks and chain catch handlers
	// it has.
	BatchCallback func(name string) bool
	// Queue is the worker's first queue: where batch callback jobs for it
	// are enqueued.
	Queue string
}

// workerSet holds the registrations of this process's workers weakly: a
// worker that is garbage no longer counts, and its entry is dropped.
type workerSet struct {
	mu   sync.Mutex
	live []weak.Pointer[WorkerHandlers]
}

// RegisterWorker tells the engine what a worker of this process runs. The
// engine holds h weakly: the worker keeps it alive for as long as it
// exists. Until a worker registers (a process that only sweeps), the
// engine expires every workflow at once and enqueues its handlers for
// whichever worker has them.
func (e *Engine) RegisterWorker(h *WorkerHandlers) {
	e.workers.mu.Lock()
	defer e.workers.mu.Unlock()
	e.workers.live = append(e.workers.live, weak.Make(h))
}

// findWorker returns the first live registration for which match is true,
// and whether any worker is registered at all. Dead entries are dropped.
func (e *Engine) findWorker(match func(*WorkerHandlers) bool) (found *WorkerHandlers, anyWorker bool) {
	e.workers.mu.Lock()
	defer e.workers.mu.Unlock()
	kept := e.workers.live[:0]
	for _, p := range e.workers.live {
		h := p.Value()
		if h == nil {
			continue
		}
		kept = append(kept, p)
		if found == nil && match(h) {
			found = h
		}
	}
	clear(e.workers.live[len(kept):])
	e.workers.live = kept
	return found, len(kept) > 0
}
