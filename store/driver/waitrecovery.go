package driver

import "context"

// WaitRecoveryTx is an optional Tx capability: the finder of the sweep
// that recovers workflow waits another engine left stranded. Queuety PHP
// sets up a wait_for_workflows wait reading its dependencies without row
// locks, so a dependency that ends while the wait is being set up can
// miss the wait's rows, and the wait commits as pending with all it waits
// for ended. A store without it has no such sweep.
type WaitRecoveryTx interface {
	// WorkflowFindStrandedWaits returns up to p.Limit workflows waiting
	// for workflows (waiting_for_workflows) with a dependency row of their
	// current step whose dependency workflow ended at or before p.Now and
	// was not seen to: completed with satisfied_at NULL, or failed or
	// cancelled. A workflow ended at its completed_at (completed,
	// cancelled) or failed_at (failed); one without that time counts as
	// ended before p.Now. Workflows in p.Exclude are skipped. They are
	// returned in id order, locked with p.Lock.
	WorkflowFindStrandedWaits(ctx context.Context, p ExpiredParams) ([]*Workflow, error)
}
