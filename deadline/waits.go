package deadline

import (
	"context"
	"log/slog"

	"github.com/queuety/queuety-go/internal/sweep"
)

// SweepWorkflowWaits is the name of the WorkflowWaits sweep.
const SweepWorkflowWaits = "workflow-waits"

// WorkflowWaits recovers workflow waits (wait_for_workflow,
// wait_for_workflows, wait_for_workflow_group) that no end of the
// workflows they wait for re-evaluated. Queuety PHP sets up such a wait
// reading those workflows without row locks, so one that ends meanwhile,
// run by either engine, can find no wait to wake while the wait commits
// as pending: the workflow would wait forever. The sweep finds waiting
// workflows with a dependency that ended at least 5 seconds ago (an end
// still re-evaluating the wait is left to finish) and completed without
// its dependency row being stamped satisfied, or failed or was
// cancelled, and re-evaluates each wait under its row lock as a
// dependency's end does:
// it settles (workflow_resumed, the workflow moves on), fails the
// workflow ("Workflow wait could not be satisfied."), or keeps waiting.
// A store without the finder (driver.WaitRecoveryTx) has nothing to
// sweep. It returns how many waits settled or failed.
//
// A run reads, through the status index, every workflow waiting for
// workflows and, through idx_waiting, its current step's dependency rows;
// workers run it only while the sweep gate saw such a workflow. A wait
// that a failed dependency cannot decide yet (any or quorum, others still
// running) is re-evaluated by every run until it settles.
func (s *Sweeper) WorkflowWaits(ctx context.Context) (int, error) {
	return s.observed(ctx, SweepWorkflowWaits, func() (int, error) {
		var left []int64
		return s.sweep(ctx, func(ctx context.Context, limit int) (int, bool, error) {
			return sweep.RecoverWaits(ctx, s.engine, limit, &left)
		}, slog.LevelWarn, "queuety: workflow waits recovered")
	})
}
