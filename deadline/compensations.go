package deadline

import (
	"context"
	"log/slog"

	"github.com/queuety/queuety-go/internal/sweep"
)

// SweepWorkflowCallbacks is the name of the WorkflowCallbacks sweep.
const SweepWorkflowCallbacks = "workflow-callbacks"

// WorkflowCallbacks starts the Go compensations and Go cancel callbacks
// of workflows that Queuety PHP failed or cancelled: PHP runs only the
// compensation and on_cancel classes it has and skips the other names.
// Only PHP knows which names it ran, so each such workflow is handed, once
// however many Go workers sweep, to Queuety PHP's bridge class, which
// enqueues the skipped names as Go jobs, newest first, one at a time. It
// needs the client's PHP callback queue (queuety.WithPHPCallbacks) and
// does nothing without it. Workflows the Go engine failed or cancelled
// never need it: their handlers are enqueued in the transaction that ends
// them. It returns how many workflows it handed to PHP.
func (s *Sweeper) WorkflowCallbacks(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepWorkflowCallbacks, func() (int, error) {
		return s.sweep(ctx, s.batchOf(sweep.ForeignEnds), slog.LevelInfo,
			"queuety: compensations and cancel callbacks enqueued for workflows another engine ended")
	})
}
