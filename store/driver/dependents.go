package driver

import "context"

// DependentsTx is an optional Tx capability: the reads that let the
// engine wake idle workers when a completion makes jobs that depend on
// the completed ones (depends_on) claimable. The stores of this module
// run them from their job completions (Tx.JobComplete,
// Tx.JobCompleteClaimed, HeldTx.JobCompleteHeld), in the completion's
// transaction, when the engine asks for them. Without it, or in a store
// that does not, those jobs are found by the workers' polls.
type DependentsTx interface {
	// JobDependsOnMax returns the highest depends_on of any job, or 0
	// when no job depends on another: a job with a higher id has no
	// dependents. It reads the end of the depends_on index, without
	// locks.
	JobDependsOnMax(ctx context.Context) (int64, error)
	// JobPendingDependents returns the pending jobs that depend on any of
	// ids, with their ID, Queue, Handler and DependsOn set, without
	// locks.
	JobPendingDependents(ctx context.Context, ids []int64) ([]*Job, error)
}
