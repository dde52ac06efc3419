package driver

import (
	"context"
	"time"
)

// Lock is one row of Queuety's locks table ({prefix}queuety_locks): a
// named lock that Queuety PHP's WithoutOverlapping and UniqueJob
// middleware take, and the exception counter of its ThrottlesExceptions
// middleware (Owner then holds the count as decimal text). Zero times stand
// for SQL NULL.
type Lock struct {
	Key        string // lock_key, at most 255 characters
	Owner      string // owner, at most 64 characters
	AcquiredAt time.Time
	ExpiresAt  time.Time // zero: never expires
}

// LockOps are the row operations on the locks table. They are part of Tx.
type LockOps interface {
	// LockInsert inserts a lock row. It returns ErrDuplicate when a row
	// with the key exists (the lock is held).
	LockInsert(ctx context.Context, l *Lock) error
	// LockGet reads the row of key.
	LockGet(ctx context.Context, key string, lock LockMode) (*Lock, error)
	// LockUpdate writes the owner and expires_at of the row of l.Key.
	LockUpdate(ctx context.Context, l *Lock) error
	// LockDelete deletes the row of key if owner holds it, and reports
	// whether it did.
	LockDelete(ctx context.Context, key, owner string) (bool, error)
	// LockDeleteExpired deletes the row of key if it has an expiry before
	// now, and reports whether it did.
	LockDeleteExpired(ctx context.Context, key string, now time.Time) (bool, error)
}
