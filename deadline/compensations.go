package deadline

import (
	"context"
	"log/slog"
)

// SweepWorkflowCallbacks is the name of the WorkflowCallbacks sweep.
const SweepWorkflowCallbacks = "workflow-callbacks"

// WorkflowCallbacks enqueues the Go compensations and Go cancel callbacks
// of workflows that Queuety PHP failed or cancelled: PHP runs only the
// compensation and on_cancel classes it has and skips the other names, so
// a Go handler registered on this process's workers would not run
// otherwise. They run newest first, as Go runs its own compensations, and
// each workflow is taken once however many Go workers sweep. Workflows the
// Go engine failed or cancelled never need it: their handlers are
// enqueued in the transaction that ends them. It returns how many
// workflows it enqueued handlers for.
func (s *Sweeper) WorkflowCallbacks(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepWorkflowCallbacks, func() (int, error) {
		return s.sweep(ctx, s.engine.RunForeignEnds, slog.LevelInfo,
			"queuety: compensations and cancel callbacks enqueued for workflows another engine ended")
	})
}
