package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the operator row operations: deleting a job, the
// log filters of `log list`, purging logs and the metrics queries.
func init() {
	registerDriver("Jobs/Delete", testDriverJobDelete)
	registerDriver("Logs/ListByHandlerSinceNewest", testDriverLogFilters)
	registerDriver("Logs/DeleteBefore", testDriverLogDeleteBefore)
	registerDriver("Logs/HandlerStatsAndDurations", testDriverLogStats)
}

func testDriverJobDelete(t *testing.T, d *DriverEnv) {
	ids := d.insertJobs(newJob("default", "a"), newJob("default", "b"))
	d.Tx(func(tx driver.Tx) error { return tx.JobDelete(d.Ctx, ids[0]) })
	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.JobGet(d.Ctx, ids[0], driver.LockNone); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "deleted job")
	assert.Equal(t, "b", d.job(ids[1]).Handler, "the other job")
	err = d.TxErr(func(tx driver.Tx) error { return tx.JobDelete(d.Ctx, ids[0]) })
	assert.ErrorIs(t, err, driver.ErrNotFound, "delete a missing job")
}

// logEventsOf lists the events of log rows, in order.
func logEventsOf(logs []*driver.LogEntry) []driver.LogEvent {
	out := make([]driver.LogEvent, len(logs))
	for i, l := range logs {
		out[i] = l.Event
	}
	return out
}

func testDriverLogFilters(t *testing.T, d *DriverEnv) {
	d.Tx(func(tx driver.Tx) error {
		return tx.LogInsert(d.Ctx, []*driver.LogEntry{
			{Handler: "send", Event: driver.LogStarted, CreatedAt: Epoch.Add(-2 * time.Hour)},
			{Handler: "send", Event: driver.LogCompleted, CreatedAt: Epoch.Add(-time.Hour)},
			{Handler: "other", Event: driver.LogStarted, CreatedAt: Epoch},
			{Handler: "send", Event: driver.LogFailed, CreatedAt: Epoch},
			{Handler: "send", Event: driver.LogBuried, CreatedAt: Epoch.Add(time.Second)},
		})
	})
	list := func(f driver.LogFilter) []driver.LogEvent {
		t.Helper()
		return logEventsOf(inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) { return tx.LogList(d.Ctx, f) }))
	}
	assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogCompleted, driver.LogFailed, driver.LogBuried},
		list(driver.LogFilter{Handler: "send"}), "handler")
	assert.Equal(t, []driver.LogEvent{driver.LogCompleted, driver.LogStarted, driver.LogFailed, driver.LogBuried},
		list(driver.LogFilter{Since: Epoch.Add(-time.Hour)}), "since: at or after")
	assert.Equal(t, []driver.LogEvent{driver.LogBuried, driver.LogFailed},
		list(driver.LogFilter{Handler: "send", Newest: true, Limit: 2}), "newest two of a handler, newest first")
	assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogCompleted},
		list(driver.LogFilter{Handler: "send", Limit: 2}), "oldest two of a handler")
	assert.Equal(t, []driver.LogEvent{driver.LogFailed},
		list(driver.LogFilter{Handler: "send", Event: driver.LogFailed, Since: Epoch}), "filters combine")
}

func testDriverLogDeleteBefore(t *testing.T, d *DriverEnv) {
	var rows []*driver.LogEntry
	for i := range 5 {
		rows = append(rows, &driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: Epoch.Add(time.Duration(i-5) * time.Minute)})
	}
	rows = append(rows, &driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: Epoch})
	d.Tx(func(tx driver.Tx) error { return tx.LogInsert(d.Ctx, rows) })
	del := func(limit int) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.LogDeleteBefore(d.Ctx, Epoch, limit) })
	}
	assert.Equal(t, int64(3), del(3), "first batch: the limit")
	assert.Equal(t, int64(2), del(3), "second batch: the rest")
	assert.Equal(t, int64(0), del(3), "nothing before the cut-off")
	left := inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) { return tx.LogList(d.Ctx, driver.LogFilter{}) })
	require.Len(t, left, 1, "a row created at the cut-off is kept")
	assert.Equal(t, Epoch, left[0].CreatedAt, "the kept row")
}

func testDriverLogStats(t *testing.T, d *DriverEnv) {
	ms := func(v int64) *int64 { return &v }
	d.Tx(func(tx driver.Tx) error {
		return tx.LogInsert(d.Ctx, []*driver.LogEntry{
			{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(30), CreatedAt: Epoch},
			{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(10), CreatedAt: Epoch},
			{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(25), CreatedAt: Epoch},
			{Handler: "a", Event: driver.LogCompleted, CreatedAt: Epoch},
			{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(1), CreatedAt: Epoch.Add(-time.Second)},
			{Handler: "a", Event: driver.LogFailed, DurationMS: ms(7), CreatedAt: Epoch},
			{Handler: "a", Event: driver.LogRetried, CreatedAt: Epoch},
			{Handler: "b", Event: driver.LogBuried, CreatedAt: Epoch},
			{Handler: "", Event: driver.LogCompleted, DurationMS: ms(3), CreatedAt: Epoch},
		})
	})
	stats := inTx(d, func(tx driver.Tx) ([]driver.HandlerLogStat, error) { return tx.LogHandlerStats(d.Ctx, Epoch) })
	want := []driver.HandlerLogStat{
		{Handler: "a", Event: driver.LogCompleted, Count: 4, Durations: 3, AvgDurationMS: 65.0 / 3},
		{Handler: "a", Event: driver.LogFailed, Count: 1, Durations: 1, AvgDurationMS: 7},
		{Handler: "b", Event: driver.LogBuried, Count: 1},
	}
	require.Len(t, stats, len(want), "groups: %+v", stats)
	for i, w := range want {
		assert.Equal(t, w.Handler, stats[i].Handler, "group %d handler", i)
		assert.Equal(t, w.Event, stats[i].Event, "group %d event", i)
		assert.Equal(t, w.Count, stats[i].Count, "group %d count", i)
		assert.Equal(t, w.Durations, stats[i].Durations, "group %d durations", i)
		assert.InDelta(t, w.AvgDurationMS, stats[i].AvgDurationMS, 1e-3, "group %d mean", i)
	}
	at := func(handler string, offset int64) (int64, bool) {
		t.Helper()
		var d2 int64
		var ok bool
		d.Tx(func(tx driver.Tx) (err error) {
			d2, ok, err = tx.LogDurationAt(d.Ctx, handler, Epoch, offset)
			return err
		})
		return d2, ok
	}
	for offset, want := range []int64{10, 25, 30} {
		got, ok := at("a", int64(offset))
		assert.True(t, ok, "duration at %d", offset)
		assert.Equal(t, want, got, "duration at %d, ascending", offset)
	}
	_, ok := at("a", 3)
	assert.False(t, ok, "past the last duration")
	_, ok = at("b", 0)
	assert.False(t, ok, "a handler without completed rows")
}
