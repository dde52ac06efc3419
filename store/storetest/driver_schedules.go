package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the schedule row operations.
func init() {
	registerDriver("Schedules/SaveInsertsThenUpdates", testDriverScheduleSave)
	registerDriver("Schedules/OneSchedulePerHandler", testDriverScheduleDuplicate)
	registerDriver("Schedules/GetMissingIsNotFound", testDriverScheduleMissing)
	registerDriver("Schedules/ListAndDelete", testDriverScheduleListDelete)
	registerDriver("Schedules/UpdateIsCompareAndSet", testDriverScheduleUpdateCAS)
	registerDriver("Schedules/FindDue", testDriverScheduleFindDue)
	registerDriver("Schedules/NextDue", testDriverScheduleNextDue)
}

func testDriverScheduleSave(t *testing.T, d *DriverEnv) {
	s := &driver.Schedule{Handler: driver.WorkflowSchedulePrefix + "nightly", Payload: []byte(`{"format":"pdf"}`), Queue: "reports",
		Expression: "0 3 * * *", ExpressionType: driver.ScheduleCron, LastRun: Epoch.Add(-time.Hour), NextRun: Epoch.Add(time.Hour),
		Overlap: driver.OverlapBuffer, Enabled: true, CreatedAt: Epoch, Workflow: []byte(`{"name":"nightly","steps":[]}`),
		CatchUp: driver.CatchUpAll, LastRunRef: 55, PendingRun: Epoch.Add(-time.Minute + time.Microsecond)}
	id := d.saveSchedule(s)
	got := d.schedule(id)
	assert.Equal(t, id, got.ID, "id")
	assert.Equal(t, s.Handler, got.Handler, "handler")
	assert.Equal(t, `{"format":"pdf"}`, string(got.Payload), "payload")
	assert.Equal(t, "reports", got.Queue, "queue")
	assert.Equal(t, "0 3 * * *", got.Expression, "expression")
	assert.Equal(t, driver.ScheduleCron, got.ExpressionType, "expression_type")
	assert.Equal(t, Epoch.Add(-time.Hour), got.LastRun, "last_run")
	assert.Equal(t, Epoch.Add(time.Hour), got.NextRun, "next_run")
	assert.Equal(t, driver.OverlapBuffer, got.Overlap, "overlap_policy")
	assert.True(t, got.Enabled, "enabled")
	assert.Equal(t, Epoch, got.CreatedAt, "created_at")
	assert.Equal(t, `{"name":"nightly","steps":[]}`, string(got.Workflow), "workflow_definition")
	assert.Equal(t, driver.CatchUpAll, got.CatchUp, "catch_up")
	assert.Equal(t, int64(55), got.LastRunRef, "last_run_ref")
	assert.Equal(t, Epoch.Add(-time.Minute+time.Microsecond), got.PendingRun, "pending_run (microseconds)")
	byHandler := inTx(d, func(tx driver.Tx) (*driver.Schedule, error) {
		return tx.ScheduleByHandler(d.Ctx, s.Handler, driver.LockNone)
	})
	assert.Equal(t, id, byHandler.ID, "schedule by handler")

	// Saving with the ID set writes every column of that row.
	s.Payload, s.Queue, s.Expression, s.ExpressionType = []byte(`{}`), "default", "300 seconds", driver.ScheduleInterval
	s.LastRun, s.NextRun, s.Overlap, s.Enabled = time.Time{}, Epoch.Add(5*time.Minute), driver.OverlapSkip, false
	s.Workflow, s.CatchUp, s.LastRunRef, s.PendingRun = nil, "", 0, time.Time{}
	assert.Equal(t, id, d.saveSchedule(s), "id after an update")
	got = d.schedule(id)
	assert.Equal(t, `{}`, string(got.Payload), "payload after the update")
	assert.Equal(t, "default", got.Queue, "queue after the update")
	assert.Equal(t, "300 seconds", got.Expression, "expression after the update")
	assert.Equal(t, driver.ScheduleInterval, got.ExpressionType, "expression_type after the update")
	assert.Zero(t, got.LastRun, "last_run after the update")
	assert.Equal(t, Epoch.Add(5*time.Minute), got.NextRun, "next_run after the update")
	assert.Equal(t, driver.OverlapSkip, got.Overlap, "overlap_policy after the update")
	assert.False(t, got.Enabled, "enabled after the update")
	assert.Nil(t, got.Workflow, "workflow_definition after the update")
	assert.Empty(t, got.CatchUp, "catch_up after the update")
	assert.Zero(t, got.LastRunRef, "last_run_ref after the update")
	assert.Zero(t, got.PendingRun, "pending_run after the update")
	assert.Len(t, inTx(d, func(tx driver.Tx) ([]*driver.Schedule, error) { return tx.ScheduleList(d.Ctx) }), 1, "schedules")
}

func testDriverScheduleDuplicate(t *testing.T, d *DriverEnv) {
	d.saveSchedule(newSchedule("cleanup", Epoch))
	err := d.TxErr(func(tx driver.Tx) error { return tx.ScheduleSave(d.Ctx, newSchedule("cleanup", Epoch.Add(time.Hour))) })
	assert.ErrorIs(t, err, driver.ErrDuplicate, "a second schedule for one handler")
	all := inTx(d, func(tx driver.Tx) ([]*driver.Schedule, error) { return tx.ScheduleList(d.Ctx) })
	require.Len(t, all, 1, "schedules")
	assert.Equal(t, Epoch, all[0].NextRun, "next_run of the first schedule")
}

func testDriverScheduleMissing(t *testing.T, d *DriverEnv) {
	id := d.saveSchedule(newSchedule("ping", Epoch))
	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.ScheduleGet(d.Ctx, id+1000, driver.LockUpdate); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "ScheduleGet of a missing id")
	err = d.TxErr(func(tx driver.Tx) error { _, err := tx.ScheduleByHandler(d.Ctx, "pong", driver.LockNone); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "ScheduleByHandler of an unknown handler")
}

func testDriverScheduleListDelete(t *testing.T, d *DriverEnv) {
	b := d.saveSchedule(newSchedule("b", Epoch))
	a := d.saveSchedule(newSchedule("a", Epoch.Add(-time.Hour)))
	c := d.saveSchedule(newSchedule("c", Epoch))
	list := func() []int64 {
		t.Helper()
		return scheduleIDs(inTx(d, func(tx driver.Tx) ([]*driver.Schedule, error) { return tx.ScheduleList(d.Ctx) }))
	}
	assert.Equal(t, []int64{b, a, c}, list(), "schedules by id")
	d.Tx(func(tx driver.Tx) error { return tx.ScheduleDelete(d.Ctx, a) })
	assert.Equal(t, []int64{b, c}, list(), "schedules after deleting one")
	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.ScheduleGet(d.Ctx, a, driver.LockNone); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "the deleted schedule")
}

func testDriverScheduleUpdateCAS(t *testing.T, d *DriverEnv) {
	s := newSchedule("sync", Epoch)
	id := d.saveSchedule(s)
	update := func(s *driver.Schedule, oldNext time.Time) bool {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (bool, error) { return tx.ScheduleUpdate(d.Ctx, s, oldNext) })
	}
	fired := *s
	fired.LastRun, fired.NextRun, fired.LastRunRef, fired.PendingRun = Epoch, Epoch.Add(time.Minute), 42, Epoch.Add(time.Microsecond)
	fired.Payload, fired.Expression = []byte(`{"changed":true}`), "1 hour" // not written by ScheduleUpdate
	assert.True(t, update(&fired, Epoch), "update with the current next_run")
	got := d.schedule(id)
	assert.Equal(t, Epoch, got.LastRun, "last_run")
	assert.Equal(t, Epoch.Add(time.Minute), got.NextRun, "next_run")
	assert.Equal(t, int64(42), got.LastRunRef, "last_run_ref")
	assert.Equal(t, Epoch.Add(time.Microsecond), got.PendingRun, "pending_run")
	assert.True(t, got.Enabled, "enabled")
	assert.Equal(t, `{}`, string(got.Payload), "payload is not written")
	assert.Equal(t, "60 seconds", got.Expression, "expression is not written")

	// A second ticker that read the row before the first fired holds the
	// old next_run: its update writes nothing.
	late := *s
	late.LastRun, late.NextRun, late.LastRunRef, late.Enabled = Epoch.Add(time.Second), Epoch.Add(time.Hour), 43, false
	assert.False(t, update(&late, Epoch), "update with a next_run that has moved on")
	got = d.schedule(id)
	assert.Equal(t, Epoch, got.LastRun, "last_run after the lost update")
	assert.Equal(t, Epoch.Add(time.Minute), got.NextRun, "next_run after the lost update")
	assert.Equal(t, int64(42), got.LastRunRef, "last_run_ref after the lost update")
	assert.True(t, got.Enabled, "enabled after the lost update")

	// Writing the values the row already holds still reports the row.
	same := *got
	assert.True(t, update(&same, Epoch.Add(time.Minute)), "update that changes nothing")
	// enabled is written too.
	same.Enabled = false
	assert.True(t, update(&same, Epoch.Add(time.Minute)), "update that disables")
	assert.False(t, d.schedule(id).Enabled, "enabled after disabling")
}

func testDriverScheduleFindDue(t *testing.T, d *DriverEnv) {
	now := Epoch.Add(500 * time.Millisecond)
	sched := func(h string, next time.Time, enabled bool, pending time.Time) int64 {
		t.Helper()
		s := newSchedule(h, next)
		s.Enabled, s.PendingRun = enabled, pending
		return d.saveSchedule(s)
	}
	var none time.Time
	want := []int64{
		sched("past", Epoch.Add(-time.Hour), true, none),
		sched("now", Epoch, true, none), // next_run holds seconds: Epoch is now's second
		sched("buffered", Epoch.Add(time.Hour), true, now.Add(-time.Microsecond)),
		sched("both", Epoch.Add(-time.Minute), true, Epoch.Add(-time.Minute)), // returned once
	}
	sched("future", Epoch.Add(time.Second), true, none)
	sched("disabled", Epoch.Add(-time.Hour), false, none)
	sched("disabled-buffered", Epoch.Add(time.Hour), false, Epoch.Add(-time.Hour))
	sched("buffered-later", Epoch.Add(time.Hour), true, now.Add(time.Microsecond))
	find := func(limit int) []int64 {
		t.Helper()
		return scheduleIDs(inTx(d, func(tx driver.Tx) ([]*driver.Schedule, error) {
			return tx.ScheduleFindDue(d.Ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockUpdate})
		}))
	}
	assert.ElementsMatch(t, want, find(100), "enabled schedules with a due run or buffered firing, each once")
	limited := find(3)
	assert.Len(t, limited, 3, "due schedules with a limit of 3")
	assert.Subset(t, want, limited, "due schedules with a limit of 3")
}

func testDriverScheduleNextDue(t *testing.T, d *DriverEnv) {
	next := func() time.Time {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (time.Time, error) { return tx.ScheduleNextDue(d.Ctx) })
	}
	assert.Zero(t, next(), "next due without schedules")
	off := newSchedule("off", Epoch.Add(time.Minute))
	off.Enabled = false
	d.saveSchedule(off)
	assert.Zero(t, next(), "next due with only a disabled schedule")
	d.saveSchedule(newSchedule("later", Epoch.Add(time.Hour)))
	d.saveSchedule(newSchedule("sooner", Epoch.Add(10*time.Minute)))
	buffered := newSchedule("buffered", Epoch.Add(2*time.Hour))
	buffered.PendingRun = Epoch // a buffered firing waits for its run to end, which no time predicts
	d.saveSchedule(buffered)
	assert.Equal(t, Epoch.Add(10*time.Minute), next(), "earliest next_run of an enabled schedule")
}
