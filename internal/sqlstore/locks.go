package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// LockInsert implements driver.Tx.
func (t *txn) LockInsert(ctx context.Context, l *driver.Lock) error {
	err := t.mayConflict(ctx, func() error {
		_, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.Locks+" (lock_key, owner, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
			l.Key, l.Owner, t.sec(l.AcquiredAt), t.sec(l.ExpiresAt))
		return err
	})
	if err != nil && t.s.D.Duplicate(err) {
		return fmt.Errorf("lock %q: %w", l.Key, driver.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("insert lock %q: %w", l.Key, err)
	}
	return nil
}

// LockGet implements driver.Tx.
func (t *txn) LockGet(ctx context.Context, key string, lock driver.LockMode) (*driver.Lock, error) {
	l := &driver.Lock{}
	err := t.tx.QueryRowContext(ctx, "SELECT lock_key, owner, acquired_at, expires_at FROM "+t.s.T.Locks+" WHERE lock_key = ?"+t.lock(lock), key).
		Scan(&l.Key, &l.Owner, nullTime{&l.AcquiredAt}, nullTime{&l.ExpiresAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("lock %q: %w", key, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read lock %q: %w", key, err)
	}
	return l, nil
}

// LockUpdate implements driver.Tx.
func (t *txn) LockUpdate(ctx context.Context, l *driver.Lock) error {
	if _, err := t.tx.ExecContext(ctx, "UPDATE "+t.s.T.Locks+" SET owner = ?, expires_at = ? WHERE lock_key = ?",
		l.Owner, t.sec(l.ExpiresAt), l.Key); err != nil {
		return fmt.Errorf("update lock %q: %w", l.Key, err)
	}
	return nil
}

// LockDelete implements driver.Tx.
func (t *txn) LockDelete(ctx context.Context, key, owner string) (bool, error) {
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Locks+" WHERE lock_key = ? AND owner = ?", key, owner)
	if err != nil {
		return false, fmt.Errorf("delete lock %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// LockDeleteExpired implements driver.Tx. It compares expires_at with
// now as Queuety PHP's WithoutOverlapping does (expires_at < NOW()).
func (t *txn) LockDeleteExpired(ctx context.Context, key string, now time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Locks+" WHERE lock_key = ? AND expires_at IS NOT NULL AND expires_at < ?",
		key, t.sec(now))
	if err != nil {
		return false, fmt.Errorf("delete expired lock %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
