package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the batch row operations.
func init() {
	registerDriver("Batches/InsertGetUpdate", testDriverBatchRow)
	registerDriver("Batches/GetManyAndList", testDriverBatchList)
	registerDriver("Batches/EventsOncePerBatchAndEvent", testDriverBatchEvents)
	registerDriver("Batches/FindForeign", testDriverBatchFindForeign)
	registerDriver("Batches/DeleteFinished", testDriverBatchDelete)
	registerDriver("Batches/JobCounts", testDriverBatchJobCounts)
}

func (d *DriverEnv) insertBatch(b *driver.Batch) int64 {
	d.T.Helper()
	if b.FailedJobIDs == nil {
		b.FailedJobIDs = []byte("[]")
	}
	if b.Options == nil {
		b.Options = []byte("[]")
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = Epoch
	}
	d.Tx(func(tx driver.Tx) error { return tx.BatchInsert(d.Ctx, b) })
	require.NotZero(d.T, b.ID, "batch id")
	return b.ID
}

func (d *DriverEnv) getBatch(id int64) *driver.Batch {
	d.T.Helper()
	var b *driver.Batch
	d.Tx(func(tx driver.Tx) (err error) { b, err = tx.BatchGet(d.Ctx, id, driver.LockNone); return err })
	return b
}

func testDriverBatchRow(t *testing.T, d *DriverEnv) {
	id := d.insertBatch(&driver.Batch{Name: "import", TotalJobs: 3, PendingJobs: 3, Options: []byte(`{"then":"App\\Done"}`)})
	b := d.getBatch(id)
	assert.Equal(t, &driver.Batch{ID: id, Name: "import", TotalJobs: 3, PendingJobs: 3, FailedJobIDs: []byte("[]"),
		Options: []byte(`{"then":"App\\Done"}`), CreatedAt: Epoch}, b, "row as inserted")

	b.PendingJobs, b.FailedJobs, b.FailedJobIDs = 0, 1, []byte("[7]")
	b.FinishedAt, b.CancelledAt = Epoch.Add(time.Minute), Epoch.Add(time.Minute)
	b.Name, b.TotalJobs, b.Options = "ignored", 99, []byte("ignored") // not written by BatchUpdate
	d.Tx(func(tx driver.Tx) error { return tx.BatchUpdate(d.Ctx, b) })
	got := d.getBatch(id)
	assert.Equal(t, "import", got.Name, "name kept")
	assert.Equal(t, 3, got.TotalJobs, "total_jobs kept")
	assert.Equal(t, `{"then":"App\\Done"}`, string(got.Options), "options kept")
	assert.Equal(t, 0, got.PendingJobs, "pending_jobs")
	assert.Equal(t, 1, got.FailedJobs, "failed_jobs")
	assert.Equal(t, "[7]", string(got.FailedJobIDs), "failed_job_ids")
	assert.Equal(t, Epoch.Add(time.Minute), got.FinishedAt, "finished_at")
	assert.Equal(t, Epoch.Add(time.Minute), got.CancelledAt, "cancelled_at")

	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.BatchGet(d.Ctx, id+100, driver.LockUpdate); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "missing batch")
}

func testDriverBatchList(t *testing.T, d *DriverEnv) {
	a := d.insertBatch(&driver.Batch{TotalJobs: 1, PendingJobs: 1})
	b := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch})
	c := d.insertBatch(&driver.Batch{TotalJobs: 1, PendingJobs: 1})
	var many []*driver.Batch
	d.Tx(func(tx driver.Tx) (err error) {
		many, err = tx.BatchGetMany(d.Ctx, []int64{c, a, 999}, driver.LockUpdate)
		return err
	})
	require.Len(t, many, 2, "found")
	assert.Equal(t, []int64{a, c}, []int64{many[0].ID, many[1].ID}, "id order, missing skipped")

	list := func(f driver.BatchFilter) []int64 {
		var rows []*driver.Batch
		d.Tx(func(tx driver.Tx) (err error) { rows, err = tx.BatchList(d.Ctx, f); return err })
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids
	}
	assert.Equal(t, []int64{c, b, a}, list(driver.BatchFilter{}), "newest first")
	assert.Equal(t, []int64{c, a}, list(driver.BatchFilter{Unfinished: true}), "unfinished")
	assert.Equal(t, []int64{b}, list(driver.BatchFilter{BeforeID: c, Limit: 1}), "paging")
}

func testDriverBatchEvents(t *testing.T, d *DriverEnv) {
	id := d.insertBatch(&driver.Batch{TotalJobs: 1})
	d.Tx(func(tx driver.Tx) error {
		return tx.BatchEventInsert(d.Ctx, []*driver.BatchEvent{
			{BatchID: id, Event: "then", Callback: "done", Runtime: "go", JobID: 5, CreatedAt: Epoch},
			{BatchID: id, Event: "finally", CreatedAt: Epoch.Add(time.Microsecond)},
		})
	})
	err := d.TxErr(func(tx driver.Tx) error {
		return tx.BatchEventInsert(d.Ctx, []*driver.BatchEvent{{BatchID: id, Event: "then", CreatedAt: Epoch}})
	})
	assert.ErrorIs(t, err, driver.ErrDuplicate, "second row for the same batch and event")
	var evs []*driver.BatchEvent
	d.Tx(func(tx driver.Tx) (err error) { evs, err = tx.BatchEventList(d.Ctx, []int64{id, 999}); return err })
	assert.Equal(t, []*driver.BatchEvent{
		{BatchID: id, Event: "then", Callback: "done", Runtime: "go", JobID: 5, CreatedAt: Epoch},
		{BatchID: id, Event: "finally", CreatedAt: Epoch.Add(time.Microsecond)},
	}, evs, "event rows")
}

func testDriverBatchFindForeign(t *testing.T, d *DriverEnv) {
	since := Epoch.Add(-time.Hour)
	running := d.insertBatch(&driver.Batch{TotalJobs: 2, PendingJobs: 2})
	failing := d.insertBatch(&driver.Batch{TotalJobs: 2, PendingJobs: 1, FailedJobs: 1})
	failingSeen := d.insertBatch(&driver.Batch{TotalJobs: 2, PendingJobs: 1, FailedJobs: 1})
	finished := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch})
	finishedSeen := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch})
	old := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: since.Add(-time.Second)})
	cancelled := d.insertBatch(&driver.Batch{TotalJobs: 1, PendingJobs: 1, FinishedAt: Epoch, CancelledAt: Epoch})
	cancelledAfterFinally := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch, CancelledAt: Epoch})
	excluded := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch})
	d.Tx(func(tx driver.Tx) error {
		return tx.BatchEventInsert(d.Ctx, []*driver.BatchEvent{
			{BatchID: failingSeen, Event: "catch", CreatedAt: Epoch},
			{BatchID: finishedSeen, Event: "finally", CreatedAt: Epoch},
			{BatchID: cancelledAfterFinally, Event: "finally", CreatedAt: Epoch},
		})
	})
	find := func(limit int) []int64 {
		var rows []*driver.Batch
		d.Tx(func(tx driver.Tx) (err error) {
			rows, err = tx.BatchFindForeign(d.Ctx, driver.ExpiredParams{Now: Epoch, Since: since, Limit: limit,
				Lock: driver.LockSkipLocked, Exclude: []int64{excluded}})
			return err
		})
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids
	}
	_, _ = running, old
	assert.Equal(t, []int64{failing, finished, cancelled, cancelledAfterFinally}, find(10),
		"a failure without a catch row, finished without a finally row, cancelled without a cancel row")
	assert.Equal(t, []int64{failing, finished}, find(2), "limit")
}

func testDriverBatchDelete(t *testing.T, d *DriverEnv) {
	oldID := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch.Add(-48 * time.Hour)})
	recent := d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: Epoch})
	open := d.insertBatch(&driver.Batch{TotalJobs: 1, PendingJobs: 1})
	d.Tx(func(tx driver.Tx) error {
		return tx.BatchEventInsert(d.Ctx, []*driver.BatchEvent{{BatchID: oldID, Event: "finally", CreatedAt: Epoch}})
	})
	var n int64
	d.Tx(func(tx driver.Tx) (err error) {
		n, err = tx.BatchDeleteFinished(d.Ctx, Epoch.Add(-24*time.Hour), 10)
		return err
	})
	assert.Equal(t, int64(1), n, "deleted")
	err := d.TxErr(func(tx driver.Tx) error { _, err := tx.BatchGet(d.Ctx, oldID, driver.LockNone); return err })
	assert.ErrorIs(t, err, driver.ErrNotFound, "old batch deleted")
	var evs []*driver.BatchEvent
	d.Tx(func(tx driver.Tx) (err error) { evs, err = tx.BatchEventList(d.Ctx, []int64{oldID}); return err })
	assert.Empty(t, evs, "its event rows deleted")
	_, _ = d.getBatch(recent), d.getBatch(open)
}

func testDriverBatchJobCounts(t *testing.T, d *DriverEnv) {
	id := d.insertBatch(&driver.Batch{TotalJobs: 3, PendingJobs: 3})
	jobs := []*driver.Job{
		{Queue: "a", Handler: "h", Payload: []byte("[]"), Status: driver.JobPending, MaxAttempts: 3, AvailableAt: Epoch, BatchID: id, CreatedAt: Epoch},
		{Queue: "a", Handler: "h", Payload: []byte("[]"), Status: driver.JobCompleted, MaxAttempts: 3, AvailableAt: Epoch, BatchID: id, CreatedAt: Epoch},
		{Queue: "b", Handler: "h", Payload: []byte("[]"), Status: driver.JobPending, MaxAttempts: 3, AvailableAt: Epoch, BatchID: id, CreatedAt: Epoch},
		{Queue: "a", Handler: "h", Payload: []byte("[]"), Status: driver.JobPending, MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch},
	}
	d.Tx(func(tx driver.Tx) error { return tx.JobInsert(context.Background(), jobs) })
	var counts []driver.QueueCount
	d.Tx(func(tx driver.Tx) (err error) { counts, err = tx.BatchJobCounts(d.Ctx, id); return err })
	assert.ElementsMatch(t, []driver.QueueCount{{Queue: "a", Status: driver.JobCompleted, Count: 1}, {Queue: "a", Status: driver.JobPending, Count: 1},
		{Queue: "b", Status: driver.JobPending, Count: 1}}, counts, "counts of the batch's jobs only")
}
