package driver

import (
	"context"
	"time"
)

// HeldClaimer is implemented by stores that can hold a claim: lock due
// plain jobs in a transaction that stays open while their handlers run,
// and record each job's outcome with one write in that same transaction
// (the worker option HoldClaims). Stores without it claim as usual.
type HeldClaimer interface {
	// HoldsClaims reports whether this store's server supports held
	// claims (a wrapper may implement the interface for a store that
	// does not).
	HoldsClaims() bool
	// InHeldTx runs fn in one transaction on one connection, once: it is
	// never re-run, since fn runs handlers. idle is how long the server
	// may leave the transaction idle before it rolls it back and closes
	// the connection (the safety timeout of a stopped process), rounded up
	// to whole seconds. It commits when fn returns nil.
	InHeldTx(ctx context.Context, idle time.Duration, fn func(tx HeldTx) error) error
}

// HeldTx is the transaction of a held claim.
type HeldTx interface {
	Tx
	// JobLockHeld locks, without changing them, up to p.Limit due
	// pending jobs of p.Queue whose handler is in p.Handlers and that can
	// be held: plain jobs (no workflow, batch, dependency, concurrency
	// group or cost) without activity deadlines and without reserved
	// payload keys (no runtime options, chain or callback). Rows other
	// transactions hold locked are skipped. p.Token and p.IDs are unused.
	JobLockHeld(ctx context.Context, p ClaimParams) ([]*Job, error)
	// JobClaimHeld claims rows JobLockHeld locked as JobClaim would
	// have: processing, reserved at, claim token token plus the new
	// attempt, one more attempt.
	JobClaimHeld(ctx context.Context, ids []int64, token int64, at time.Time) error
	// JobCompleteHeld completes rows JobLockHeld locked with one write:
	// the columns JobClaim (with token, at claimedAt) and then
	// JobCompleteClaimed (at) would have left.
	JobCompleteHeld(ctx context.Context, ids []int64, token int64, claimedAt, at time.Time) error
}
