package driver

import "context"

// DependentReader is an optional interface of a Store: it reads which
// pending jobs wait on others (depends_on), so that the engine, once jobs
// completed, wakes idle workers for the jobs that completion made
// claimable. A store without it leaves them to the workers' polls.
type DependentReader interface {
	// JobDependents returns, for the pending jobs that depend on one of
	// ids, their queue and handler (only those fields are set), read
	// with one statement outside a transaction.
	JobDependents(ctx context.Context, ids []int64) ([]*Job, error)
}
