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
	// JournalHeld writes and commits, outside any transaction, one
	// journal row naming the jobs a held transaction holds, each with its
	// attempts before the claim, and returns its id. Stale recovery
	// counts an attempt for those jobs once the row outlives expires (the
	// process died with its transaction: RecoverHeldTx). On an error the
	// server may still have written the row (the client lost the reply):
	// the store deletes it by its content, jobs and expires, which no
	// other live row shares (and may delete it again later), and when
	// that delete fails the error wraps ErrHeldJournalLeft.
	JournalHeld(ctx context.Context, jobs []HeldJob, expires time.Time) (int64, error)
	// EndHeldJournal deletes journal row id outside any transaction: the
	// held transaction ended with an outcome its process knows.
	EndHeldJournal(ctx context.Context, id int64) error
}

// HeldClaimsRefuser is implemented by stores that can tell why they hold
// no claims (the worker's start-up log line of HoldClaims).
type HeldClaimsRefuser interface {
	// NoHeldClaims returns why the store holds no claims, or "" when it
	// holds them.
	NoHeldClaims() string
}

// HeldJob is a job of a held claim's journal row, with its attempts
// before the claim.
type HeldJob struct {
	ID       int64
	Attempts int
}

// HeldJournal is a journal row of a held transaction (JournalHeld).
type HeldJournal struct {
	ID   int64
	Jobs []HeldJob
}

// HeldJournalTx is implemented by the transactions of stores that hold
// claims: stale recovery's access to the held claims' journal.
type HeldJournalTx interface {
	// HeldJournalExpired locks (FOR UPDATE SKIP LOCKED) up to limit
	// journal rows that expired at or before now, oldest first.
	HeldJournalExpired(ctx context.Context, now time.Time, limit int) ([]HeldJournal, error)
	// HeldJournalDelete deletes journal rows.
	HeldJournalDelete(ctx context.Context, ids []int64) error
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
	// HeldJournalDelete deletes journal rows in the held transaction, so
	// that they go with its commit.
	HeldJournalDelete(ctx context.Context, ids []int64) error
}
