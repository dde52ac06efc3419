package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the locks-table row operations.
func init() {
	registerDriver("LockTable/InsertGetDuplicate", testDriverLockInsert)
	registerDriver("LockTable/UpdateAndDeleteByOwner", testDriverLockUpdateDelete)
	registerDriver("LockTable/DeleteExpired", testDriverLockDeleteExpired)
}

func (d *DriverEnv) lockGet(key string) (*driver.Lock, error) {
	var l *driver.Lock
	err := d.TxErr(func(tx driver.Tx) (err error) {
		l, err = tx.LockGet(d.Ctx, key, driver.LockUpdate)
		return err
	})
	return l, err
}

func testDriverLockInsert(t *testing.T, d *DriverEnv) {
	in := &driver.Lock{Key: "import:7", Owner: "0123456789abcdef0123456789abcdef", AcquiredAt: Epoch.Add(400 * time.Millisecond),
		ExpiresAt: Epoch.Add(300*time.Second + 900*time.Millisecond)}
	d.Tx(func(tx driver.Tx) error { return tx.LockInsert(d.Ctx, in) })
	l, err := d.lockGet("import:7")
	require.NoError(t, err)
	assert.Equal(t, &driver.Lock{Key: "import:7", Owner: in.Owner, AcquiredAt: Epoch, ExpiresAt: Epoch.Add(300 * time.Second)}, l,
		"row, times in whole seconds as Queuety's DATETIME columns keep them")
	err = d.TxErr(func(tx driver.Tx) error {
		return tx.LockInsert(d.Ctx, &driver.Lock{Key: "import:7", Owner: "other", AcquiredAt: Epoch})
	})
	assert.ErrorIs(t, err, driver.ErrDuplicate, "a held key")
	d.Tx(func(tx driver.Tx) error {
		return tx.LockInsert(d.Ctx, &driver.Lock{Key: "forever", Owner: "o", AcquiredAt: Epoch})
	})
	l, err = d.lockGet("forever")
	require.NoError(t, err)
	assert.True(t, l.ExpiresAt.IsZero(), "no expiry is NULL")
	_, err = d.lockGet("missing")
	assert.ErrorIs(t, err, driver.ErrNotFound, "missing key")
}

func testDriverLockUpdateDelete(t *testing.T, d *DriverEnv) {
	d.Tx(func(tx driver.Tx) error {
		return tx.LockInsert(d.Ctx, &driver.Lock{Key: "throttle_exceptions:h", Owner: "1", AcquiredAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)})
	})
	d.Tx(func(tx driver.Tx) error {
		return tx.LockUpdate(d.Ctx, &driver.Lock{Key: "throttle_exceptions:h", Owner: "2", ExpiresAt: Epoch.Add(2 * time.Minute)})
	})
	l, err := d.lockGet("throttle_exceptions:h")
	require.NoError(t, err)
	assert.Equal(t, "2", l.Owner, "owner")
	assert.Equal(t, Epoch.Add(2*time.Minute), l.ExpiresAt, "expires_at")
	assert.Equal(t, Epoch, l.AcquiredAt, "acquired_at unchanged")

	gone := inTx(d, func(tx driver.Tx) (bool, error) { return tx.LockDelete(d.Ctx, "throttle_exceptions:h", "1") })
	assert.False(t, gone, "delete by another owner")
	gone = inTx(d, func(tx driver.Tx) (bool, error) { return tx.LockDelete(d.Ctx, "throttle_exceptions:h", "2") })
	assert.True(t, gone, "delete by the owner")
	_, err = d.lockGet("throttle_exceptions:h")
	assert.ErrorIs(t, err, driver.ErrNotFound, "after delete")
}

func testDriverLockDeleteExpired(t *testing.T, d *DriverEnv) {
	d.Tx(func(tx driver.Tx) error {
		for _, l := range []*driver.Lock{
			{Key: "a", Owner: "o", AcquiredAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)},
			{Key: "b", Owner: "o", AcquiredAt: Epoch},
		} {
			if err := tx.LockInsert(d.Ctx, l); err != nil {
				return err
			}
		}
		return nil
	})
	del := func(key string, now time.Time) bool {
		return inTx(d, func(tx driver.Tx) (bool, error) { return tx.LockDeleteExpired(d.Ctx, key, now) })
	}
	assert.False(t, del("a", Epoch.Add(time.Minute)), "expires_at = now is not expired (expires_at < NOW())")
	assert.False(t, del("b", Epoch.Add(time.Hour)), "a lock without expiry")
	assert.True(t, del("a", Epoch.Add(time.Minute+time.Second)), "expired")
	_, err := d.lockGet("a")
	assert.ErrorIs(t, err, driver.ErrNotFound, "expired row deleted")
	_, err = d.lockGet("b")
	assert.NoError(t, err, "the other key stays")
}
