package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// MaxKey is the longest lock key the locks table holds.
const MaxKey = 255

// Clock tells the locks the time: acquisitions and expiries are stamped
// with it.
type Clock interface {
	Now() time.Time
}

// Service reads and writes the named locks and counters of one store. It
// is safe for concurrent use.
type Service struct {
	store driver.Store
	clock Clock
}

// New returns the locks and counters of store.
func New(store driver.Store, clock Clock) *Service {
	return &Service{store: store, clock: clock}
}

// NewOwner returns a random owner id: 32 hex characters, as Queuety's
// bin2hex(random_bytes(16)).
func NewOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckKey checks that key fits the locks table: 1-MaxKey bytes.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("%w: lock key must be 1-%d bytes, got %d", driver.ErrInvalidArgument, MaxKey, len(key))
	}
	return nil
}

// Acquire takes the named lock for owner, as Queuety's
// WithoutOverlapping does: it first deletes the key's row if its expiry
// has passed, then inserts the row (acquired now, expiring after ttl; no
// expiry when ttl <= 0). It reports whether owner now holds the lock; a
// row another owner holds means false.
func (s *Service) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := CheckKey(key); err != nil {
		return false, err
	}
	acquired := false
	err := s.store.InTx(ctx, func(tx driver.Tx) error {
		acquired = false
		now := s.clock.Now()
		if _, err := tx.LockDeleteExpired(ctx, key, now); err != nil {
			return err
		}
		l := &driver.Lock{Key: key, Owner: owner, AcquiredAt: now}
		if ttl > 0 {
			l.ExpiresAt = now.Add(ttl) // stored in whole seconds, as time() + release_after
		}
		err := tx.LockInsert(ctx, l)
		if errors.Is(err, driver.ErrDuplicate) {
			return nil
		}
		acquired = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("queuety: acquire lock %q: %w", key, err)
	}
	return acquired, nil
}

// Release deletes the named lock if owner holds it, and reports
// whether it did (false: it expired and was taken over, or was never held).
func (s *Service) Release(ctx context.Context, key, owner string) (bool, error) {
	var released bool
	err := s.store.InTx(ctx, func(tx driver.Tx) (err error) {
		released, err = tx.LockDelete(ctx, key, owner)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("queuety: release lock %q: %w", key, err)
	}
	return released, nil
}

// Count returns the count a ThrottlesExceptions row holds for key:
// the owner column read as a number, or 0 when there is no row or it has
// expired.
func (s *Service) Count(ctx context.Context, key string) (int64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	var n int64
	err := s.store.InTx(ctx, func(tx driver.Tx) error {
		n = 0
		l, err := tx.LockGet(ctx, key, driver.LockNone)
		if errors.Is(err, driver.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(s.clock.Now()) {
			return nil
		}
		n = counterValue(l.Owner)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: read counter %q: %w", key, err)
	}
	return n, nil
}

// Increment adds one to the count of key and sets its expiry to
// now + window, as Queuety's ThrottlesExceptions does, except that an
// expired count starts again at 1 (Queuety keeps adding to it, so a
// handler could be throttled by exceptions older than the window).
func (s *Service) Increment(ctx context.Context, key string, window time.Duration) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	var err error
	for range 3 { // a concurrent first increment inserts the row: read it again
		err = s.store.InTx(ctx, func(tx driver.Tx) error {
			now := s.clock.Now()
			expires := now.Add(window)
			l, err := tx.LockGet(ctx, key, driver.LockUpdate)
			if errors.Is(err, driver.ErrNotFound) {
				return tx.LockInsert(ctx, &driver.Lock{Key: key, Owner: "1", AcquiredAt: now, ExpiresAt: expires})
			}
			if err != nil {
				return err
			}
			n := counterValue(l.Owner) + 1
			if !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(now) {
				n = 1
			}
			l.Owner, l.ExpiresAt = strconv.FormatInt(n, 10), expires
			return tx.LockUpdate(ctx, l)
		})
		if !errors.Is(err, driver.ErrDuplicate) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("queuety: increment counter %q: %w", key, err)
	}
	return nil
}

// counterValue reads a counter row's owner as MySQL's CAST(owner AS
// UNSIGNED) would: its leading digits, 0 when there are none.
func counterValue(owner string) int64 {
	end := 0
	for end < len(owner) && owner[end] >= '0' && owner[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(owner[:end], 10, 64)
	return n
}
