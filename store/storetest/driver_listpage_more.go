package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the operator's smaller lists: schedules, webhooks
// and workers read a page at a time, and the counts beside the jobs list.
func init() {
	registerDriver("ListPages/SchedulesNewestFirstWithSummary", testDriverSchedulePage)
	registerDriver("ListPages/WebhooksNewestFirstWithoutSecrets", testDriverWebhookPage)
	registerDriver("ListPages/WorkersBoundedMostRecentFirst", testDriverWorkerPage)
	registerDriver("ListPages/InternalJobCountsByStatus", testDriverJobInternalCounts)
}

func testDriverSchedulePage(t *testing.T, d *DriverEnv) {
	empty := inTx(d, func(tx driver.Tx) (*driver.ScheduleSummary, error) { return tx.ScheduleSummary(d.Ctx) })
	assert.Equal(t, &driver.ScheduleSummary{}, empty, "no schedules")
	var ids []int64
	for i := range 5 {
		s := &driver.Schedule{Handler: fmt.Sprintf("h%d", i), Queue: "default", Expression: "every 1 hour", ExpressionType: driver.ScheduleInterval,
			NextRun: Epoch.Add(time.Duration(5-i) * time.Hour), Overlap: driver.OverlapAllow, Enabled: i != 4, CreatedAt: Epoch}
		ids = append(ids, d.saveSchedule(s))
	}
	page := func(k driver.Keyset) []int64 {
		t.Helper()
		p := inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Schedule], error) { return tx.SchedulePage(d.Ctx, k) })
		out := make([]int64, len(p.Rows))
		for i, s := range p.Rows {
			out[i] = s.ID
		}
		return out
	}
	assert.Equal(t, []int64{ids[4], ids[3]}, page(driver.Keyset{Limit: 2}), "the newest first")
	assert.Equal(t, []int64{ids[2], ids[1]}, page(driver.Keyset{Limit: 2, BeforeID: ids[3]}), "older")
	assert.Equal(t, []int64{ids[1], ids[0]}, page(driver.Keyset{Limit: 2, Oldest: true}), "the oldest")
	assert.Equal(t, []int64{ids[2], ids[1]}, page(driver.Keyset{Limit: 2, AfterID: ids[0]}), "newer, newest first")
	sum := inTx(d, func(tx driver.Tx) (*driver.ScheduleSummary, error) { return tx.ScheduleSummary(d.Ctx) })
	assert.Equal(t, int64(4), sum.Enabled, "enabled")
	assert.Equal(t, int64(1), sum.Disabled, "disabled")
	assert.Equal(t, Epoch.Add(2*time.Hour), sum.NextRun, "the earliest next run of an enabled schedule")
}

func testDriverWebhookPage(t *testing.T, d *DriverEnv) {
	var ids []int64
	for i := range 4 {
		h := &driver.Webhook{Event: "job.buried", URL: fmt.Sprintf("https://a.example/%d", i), CreatedAt: Epoch}
		if i%2 == 1 {
			h.Secret = "a-secret-of-the-hook"
		}
		d.Tx(func(tx driver.Tx) error { return tx.WebhookInsert(d.Ctx, h) })
		ids = append(ids, h.ID)
	}
	page := func(k driver.Keyset) []*driver.Webhook {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Webhook], error) { return tx.WebhookPage(d.Ctx, k) }).Rows
	}
	got := page(driver.Keyset{Limit: 3})
	require.Len(t, got, 3)
	assert.Equal(t, []int64{ids[3], ids[2], ids[1]}, []int64{got[0].ID, got[1].ID, got[2].ID}, "the newest first")
	assert.Equal(t, []bool{true, false, true}, []bool{got[0].Signed, got[1].Signed, got[2].Signed}, "signed")
	for _, h := range got {
		assert.Empty(t, h.Secret, "no secret is read")
		assert.Equal(t, Epoch, h.CreatedAt)
	}
	assert.Equal(t, "https://a.example/3", got[0].URL)
	older := page(driver.Keyset{Limit: 3, BeforeID: ids[1]})
	require.Len(t, older, 1)
	assert.Equal(t, ids[0], older[0].ID)
	oldest := page(driver.Keyset{Limit: 2, Oldest: true})
	require.Len(t, oldest, 2)
	assert.Equal(t, []int64{ids[1], ids[0]}, []int64{oldest[0].ID, oldest[1].ID}, "the oldest, newest first")
}

func testDriverWorkerPage(t *testing.T, d *DriverEnv) {
	for i := range 5 {
		at := Epoch.Add(time.Duration(i) * time.Second)
		w := &queuetytype.Worker{ID: fmt.Sprintf("w%d", i), Host: "h", PID: i, HeartbeatInterval: time.Second, StartedAt: Epoch, LastHeartbeat: at}
		d.Tx(func(tx driver.Tx) error { return tx.WorkerSave(d.Ctx, w) })
	}
	var list []*queuetytype.Worker
	var total int64
	d.Tx(func(tx driver.Tx) (err error) { list, total, err = tx.WorkerPage(d.Ctx, 3); return err })
	assert.Equal(t, int64(5), total, "every row counted")
	require.Len(t, list, 3, "at most the limit")
	assert.Equal(t, []string{"w4", "w3", "w2"}, []string{list[0].ID, list[1].ID, list[2].ID}, "the most recently renewed first")
}

func testDriverJobInternalCounts(t *testing.T, d *DriverEnv) {
	mk := func(q, h string, st driver.JobStatus) *driver.Job {
		j := newJob(q, h)
		j.Status = st
		return j
	}
	d.insertJobs(
		mk("a", "__queuety_sleep", driver.JobPending),
		mk("a", "__queuety_for_each", driver.JobPending),
		mk("a", "__queuety_", driver.JobCompleted),
		mk("b", "__queuety_wait_signal", driver.JobBuried),
		// Not internal: names that sort near the prefix.
		mk("a", "__queuety", driver.JobPending),
		mk("a", "__queuetz", driver.JobPending),
		mk("a", "__queuety`x", driver.JobPending),
		mk("a", "__queuetya", driver.JobPending),
		mk("a", "_a", driver.JobPending),
		mk("a", "send", driver.JobPending),
		mk("b", "send", driver.JobBuried),
	)
	counts := func(queue string) map[driver.JobStatus]int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (map[driver.JobStatus]int64, error) { return tx.JobInternalCounts(d.Ctx, queue) })
	}
	assert.Equal(t, map[driver.JobStatus]int64{driver.JobPending: 2, driver.JobCompleted: 1, driver.JobBuried: 1}, counts(""), "every queue")
	assert.Equal(t, map[driver.JobStatus]int64{driver.JobPending: 2, driver.JobCompleted: 1}, counts("a"), "queue a")
	assert.Empty(t, counts("c"), "a queue without jobs")
}
