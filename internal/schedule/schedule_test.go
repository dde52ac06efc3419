package schedule_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var start = time.Date(2031, 4, 5, 6, 7, 0, 0, time.UTC)

// open returns a store on freshly migrated tables of the test server.
func open(t *testing.T) driver.Store {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// tick runs one tick the way the engine's sweep does: due rows taken with
// SKIP LOCKED, each handed to TickOne. It returns the firings and the
// missed slots.
func tick(t *testing.T, s driver.Store, svc *schedule.Service, c *clock) (fired, missed int) {
	t.Helper()
	ctx := context.Background()
	var notes schedule.TickNotes
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		fired = 0
		notes.Reset()
		rows, err := tx.ScheduleFindDue(ctx, driver.ExpiredParams{Now: c.Now(), Limit: 10, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		for _, row := range rows {
			n, _, err := svc.TickOne(ctx, tx, row, c.Now(), &notes)
			if err != nil {
				return err
			}
			fired += n
		}
		return nil
	}))
	return fired, svc.LogMissed(&notes)
}

// jobs returns the jobs of handler.
func jobs(t *testing.T, s driver.Store, ids ...int64) []*driver.Job {
	t.Helper()
	var out []*driver.Job
	require.NoError(t, s.InTx(context.Background(), func(tx driver.Tx) (err error) {
		out, err = tx.JobGetMany(context.Background(), ids, driver.LockNone)
		return err
	}))
	return out
}

// TestTickCatchUpAndOverlap: a job schedule saved at start fires its
// first slot, merges the slots a late tick finds under CatchUpOnce, and
// under OverlapSkip holds back a firing while its job is pending.
func TestTickCatchUpAndOverlap(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	c := &clock{t: start}
	wakes := 0
	svc := schedule.New(s, schedule.Config{Clock: c, WakeSchedules: func() { wakes++ }})

	id, err := svc.Save(ctx, driver.Schedule{Handler: "report", Expression: "1 minute", ExpressionType: queuetytype.ScheduleInterval,
		Overlap: queuetytype.OverlapAllow, Enabled: true}, true)
	require.NoError(t, err)
	assert.Equal(t, 1, wakes, "saving wakes the ticks")
	again, err := svc.Save(ctx, driver.Schedule{Handler: "report", Expression: "1 minute", ExpressionType: queuetytype.ScheduleInterval,
		Overlap: queuetytype.OverlapAllow, Enabled: true}, true)
	require.NoError(t, err)
	assert.Equal(t, id, again, "saving the same schedule updates it in place")
	assert.Equal(t, 1, wakes, "an unchanged save writes nothing")

	next, ok, _, err := svc.NextDueBuffered(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Minute), next)

	fired, missed := tick(t, s, svc, c)
	assert.Equal(t, 0, fired, "nothing due yet")
	assert.Equal(t, 0, missed)

	c.add(time.Minute)
	fired, missed = tick(t, s, svc, c)
	assert.Equal(t, 1, fired)
	assert.Equal(t, 0, missed)

	c.add(5*time.Minute + 30*time.Second) // five slots due at once
	fired, missed = tick(t, s, svc, c)
	assert.Equal(t, 1, fired, "CatchUpOnce fires once for all due slots")
	assert.Equal(t, 4, missed, "the other four get no firing of their own")

	var row *driver.Schedule
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) { row, err = tx.ScheduleGet(ctx, id, driver.LockNone); return err }))
	assert.Equal(t, start.Add(7*time.Minute), row.NextRun, "the next run is the first slot after the tick")
	j := jobs(t, s, row.LastRunRef)
	require.Len(t, j, 1)
	assert.Equal(t, queuetytype.DefaultQueue, j[0].Queue)
	assert.Equal(t, "report", j[0].Handler)
	assert.Equal(t, driver.JobPending, j[0].Status)

	// OverlapSkip: the last job is still pending, so running it now is
	// held back.
	_, err = svc.Save(ctx, driver.Schedule{Handler: "report", Expression: "1 minute", ExpressionType: queuetytype.ScheduleInterval,
		Overlap: queuetytype.OverlapSkip, Enabled: true}, true)
	require.NoError(t, err)
	ref, err := svc.RunNow(ctx, id)
	require.NoError(t, err)
	assert.Zero(t, ref, "the previous run is active: skipped")

	require.NoError(t, svc.SetEnabled(ctx, id, false))
	_, ok, _, err = svc.NextDueBuffered(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "no schedule enabled")

	require.NoError(t, svc.Remove(ctx, id))
	require.ErrorIs(t, svc.Remove(ctx, id), queuetytype.ErrNotFound)
}

// TestWorkflowFiring: a workflow schedule's firing goes through
// StartWorkflow with the slot's key; a row StartWorkflow calls unreadable
// is put off for an hour without failing the tick.
func TestWorkflowFiring(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	c := &clock{t: start}
	var keys []string
	unreadable := false
	jobWakes := 0
	svc := schedule.New(s, schedule.Config{Clock: c, WakeJobs: func() { jobWakes++ },
		StartWorkflow: func(ctx context.Context, tx driver.Tx, sc *driver.Schedule, slot, now time.Time) (int64, error) {
			if unreadable {
				return 0, schedule.Unreadable(errors.New("bad definition"))
			}
			keys = append(keys, schedule.FiringKey("", sc.ID, slot))
			wf := &driver.Workflow{Name: "nightly", Status: driver.WorkflowRunning, State: []byte(`{}`), StartedAt: now,
				RunNumber: 1, RunStartedAt: now}
			return wf.ID, tx.WorkflowInsert(ctx, wf)
		}})
	id, err := svc.Save(ctx, driver.Schedule{Handler: queuetytype.WorkflowSchedulePrefix + "nightly", Expression: "1 minute",
		ExpressionType: queuetytype.ScheduleInterval, Overlap: queuetytype.OverlapAllow, Enabled: true,
		Workflow: []byte(`{"name":"nightly"}`), Payload: []byte(`{}`)}, true)
	require.NoError(t, err)

	c.add(time.Minute)
	fired, _ := tick(t, s, svc, c)
	assert.Equal(t, 1, fired)
	assert.Equal(t, []string{"queuety-schedule:" + itoa(id) + "@" + start.Add(time.Minute).Format(time.RFC3339)}, keys)

	ref, err := svc.RunNow(ctx, id)
	require.NoError(t, err)
	assert.NotZero(t, ref)
	assert.Equal(t, 1, jobWakes, "a manual firing wakes the claim loops")

	unreadable = true
	c.add(time.Minute)
	fired, _ = tick(t, s, svc, c)
	assert.Equal(t, 0, fired)
	var row *driver.Schedule
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) { row, err = tx.ScheduleGet(ctx, id, driver.LockNone); return err }))
	assert.Equal(t, c.Now().Add(time.Hour), row.NextRun, "an unreadable row waits an hour")

	got, err := svc.RemoveByHandler(ctx, queuetytype.WorkflowSchedulePrefix+"nightly")
	require.NoError(t, err)
	assert.Equal(t, id, got)
}

func TestFiringKey(t *testing.T) {
	slot := time.Date(2031, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	assert.Equal(t, "queuety-schedule:7@2031-01-02T02:04:05Z", schedule.FiringKey("", 7, slot))
	assert.Equal(t, "mine@2031-01-02T02:04:05Z", schedule.FiringKey("mine", 7, slot))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
