package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of driver.IdleReader, on the stores that offer it.
func init() {
	registerDriver("Idle/NextDueAndMaintenanceDue", testDriverIdleReads)
}

func testDriverIdleReads(t *testing.T, d *DriverEnv) {
	r, ok := d.S.(driver.IdleReader)
	if !ok {
		t.Skip("the store has no idle reads")
	}
	p := claimParams("default", Epoch, 1, "h")
	_, found, err := r.JobNextDue(d.Ctx, p)
	require.NoError(t, err)
	assert.False(t, found, "next due in an empty table")
	later := newJob("default", "h")
	later.AvailableAt = Epoch.Add(time.Minute)
	d.insertJob(later)
	sooner := newJob("default", "other")
	sooner.AvailableAt = Epoch
	d.insertJob(sooner) // a handler the claim does not take
	at, found, err := r.JobNextDue(d.Ctx, p)
	require.NoError(t, err)
	require.True(t, found, "next due")
	assert.True(t, at.Equal(Epoch.Add(time.Minute)), "next due at %s", at)

	next, buffered, err := r.ScheduleNextDueRead(d.Ctx)
	require.NoError(t, err)
	assert.True(t, next.IsZero(), "no schedule")
	assert.False(t, buffered, "no buffered firing")

	m, err := r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.False(t, m.Unreserved)
	assert.True(t, m.Reserved.IsZero() && m.Activity.IsZero() && m.Wait.IsZero() && m.MachineTimer.IsZero(), "nothing armed: %+v", m)
	running := newJob("default", "h")
	running.Status = driver.JobProcessing
	reserved := Epoch.Add(-time.Minute)
	running.ReservedAt = reserved
	d.insertJob(running)
	m, err = r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.True(t, m.Reserved.Equal(reserved), "earliest reserved_at %s", m.Reserved)
}
