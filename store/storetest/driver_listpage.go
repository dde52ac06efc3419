package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the operator's list pages: newest first, keyset
// paging from both ends, and filters no index serves bounded by a scan
// window.
func init() {
	registerDriver("ListPages/JobsNewestFirstFromBothEnds", testDriverJobPageKeyset)
	registerDriver("ListPages/JobsSearchWithinAScanWindow", testDriverJobPageSearch)
	registerDriver("ListPages/HideInternalMatchesThePrefixExactly", testDriverJobPageHideInternalCase)
	registerDriver("ListPages/WorkflowsNewestFirstWithStartedRange", testDriverWorkflowPage)
	registerDriver("ListPages/MachinesNewestFirstFromBothEnds", testDriverMachinePage)
}

func pageJobIDs(p *driver.Page[*driver.Job]) []int64 {
	out := make([]int64, len(p.Rows))
	for i, j := range p.Rows {
		out[i] = j.ID
	}
	return out
}

func testDriverJobPageKeyset(t *testing.T, d *DriverEnv) {
	var jobs []*driver.Job
	for i := range 7 {
		j := newJob("q", "h")
		j.Payload = []byte(fmt.Sprintf(`{"i":%d}`, i))
		jobs = append(jobs, j)
	}
	other := newJob("other", "h")
	jobs = append(jobs, other)
	ids := d.insertJobs(jobs...)
	q7 := ids[:7] // oldest first
	page := func(k driver.Keyset) *driver.Page[*driver.Job] {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Job], error) {
			return tx.JobPage(d.Ctx, driver.JobPageQuery{Queue: "q", Page: k})
		})
	}
	first := page(driver.Keyset{Limit: 3})
	assert.Equal(t, []int64{q7[6], q7[5], q7[4]}, pageJobIDs(first), "the first page: the newest three, newest first")
	assert.Nil(t, first.Rows[0].Payload, "no payload is read")
	assert.Zero(t, first.ScanEnd, "no residual filter: no scan window")
	next := page(driver.Keyset{BeforeID: q7[4], Limit: 3})
	assert.Equal(t, []int64{q7[3], q7[2], q7[1]}, pageJobIDs(next), "the next page: older than the last row shown")
	prev := page(driver.Keyset{AfterID: q7[3], Limit: 2})
	assert.Equal(t, []int64{q7[5], q7[4]}, pageJobIDs(prev), "the previous page: the oldest of the newer rows, newest first")
	last := page(driver.Keyset{Oldest: true, Limit: 3})
	assert.Equal(t, []int64{q7[2], q7[1], q7[0]}, pageJobIDs(last), "the last page: the oldest three, newest first")
	one := inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Job], error) {
		return tx.JobPage(d.Ctx, driver.JobPageQuery{ID: ids[7]})
	})
	assert.Equal(t, []int64{ids[7]}, pageJobIDs(one), "by id")
}

// testDriverJobPageHideInternalCase: HideInternal leaves out the handlers
// that begin with the engine's prefix byte for byte, as the engine names
// them, on every store: a handler that differs in case, or in place of
// an underscore (a LIKE wildcard), is the user's and stays listed.
func testDriverJobPageHideInternalCase(t *testing.T, d *DriverEnv) {
	handlers := []string{
		driver.InternalHandlerPrefix + "delay",
		strings.ToUpper(driver.InternalHandlerPrefix) + "Shout",
		"__Queuety_mixed",
		"__queuetyXdelay",
		"mail.send",
	}
	var jobs []*driver.Job
	for _, h := range handlers {
		jobs = append(jobs, newJob("q", h))
	}
	d.insertJobs(jobs...)
	page := inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Job], error) {
		return tx.JobPage(d.Ctx, driver.JobPageQuery{HideInternal: true})
	})
	var got []string
	for _, j := range page.Rows {
		got = append(got, j.Handler)
	}
	assert.ElementsMatch(t, handlers[1:], got, "only the handler with the exact prefix is hidden")
}

func testDriverJobPageSearch(t *testing.T, d *DriverEnv) {
	var jobs []*driver.Job
	for i := range 10 {
		h := "mail.send"
		if i%3 == 0 {
			h = driver.InternalHandlerPrefix + "delay"
		}
		j := newJob("q", h)
		j.Payload = []byte(fmt.Sprintf(`{"to":"user%d@example.com","note":"50%%_off"}`, i))
		j.CreatedAt = Epoch.Add(time.Duration(i) * time.Minute)
		jobs = append(jobs, j)
	}
	ids := d.insertJobs(jobs...)
	search := func(q driver.JobPageQuery) *driver.Page[*driver.Job] {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Job], error) { return tx.JobPage(d.Ctx, q) })
	}

	got := search(driver.JobPageQuery{PayloadContains: "USER4@"})
	assert.Equal(t, []int64{ids[4]}, pageJobIDs(got), "payload substring, ASCII case ignored")
	assert.Zero(t, got.ScanEnd, "the window held every candidate")
	assert.Empty(t, pageJobIDs(search(driver.JobPageQuery{PayloadContains: "50%x"})), "% is matched literally")
	assert.Len(t, pageJobIDs(search(driver.JobPageQuery{PayloadContains: "50%_off"})), 10, "% and _ literally")

	visible := search(driver.JobPageQuery{HideInternal: true})
	for _, j := range visible.Rows {
		assert.Equal(t, "mail.send", j.Handler, "internal handlers hidden")
	}
	assert.Len(t, visible.Rows, 6)

	ranged := search(driver.JobPageQuery{CreatedFrom: Epoch.Add(2 * time.Minute), CreatedTo: Epoch.Add(5 * time.Minute)})
	assert.Equal(t, []int64{ids[4], ids[3], ids[2]}, pageJobIDs(ranged), "created in [2m, 5m)")

	// A window of four candidates: each page reads at most four rows and
	// says where it stopped, and the next one goes on from there.
	win := search(driver.JobPageQuery{PayloadContains: "user1@", Page: driver.Keyset{ScanRows: 4}})
	assert.Empty(t, win.Rows, "user1 is beyond the window of the newest four")
	assert.Equal(t, ids[6], win.ScanEnd, "the scan stopped at the fourth newest candidate")
	on := search(driver.JobPageQuery{PayloadContains: "user1@", Page: driver.Keyset{ScanRows: 4, BeforeID: win.ScanEnd}})
	assert.Empty(t, on.Rows, "the next window: ids[5..2]")
	assert.Equal(t, ids[2], on.ScanEnd)
	end := search(driver.JobPageQuery{PayloadContains: "user1@", Page: driver.Keyset{ScanRows: 4, BeforeID: on.ScanEnd}})
	assert.Equal(t, []int64{ids[1]}, pageJobIDs(end), "found in the last window")
	assert.Zero(t, end.ScanEnd, "the last window was not full")

	fromOldest := search(driver.JobPageQuery{PayloadContains: "user8@", Page: driver.Keyset{ScanRows: 4, Oldest: true}})
	assert.Empty(t, fromOldest.Rows)
	assert.Equal(t, ids[3], fromOldest.ScanEnd, "read from the oldest end, the scan stops at the fourth oldest")

	// Added last, so the windows above hold the ten jobs only.
	cafe := newJob("q2", "h")
	cafe.Payload = []byte(`{"name":"Caf\u00e9 \ud83d\ude00","url":"http:\/\/x"}`)
	cafeID := d.insertJob(cafe)
	assert.Equal(t, []int64{cafeID}, pageJobIDs(search(driver.JobPageQuery{PayloadContains: "café 😀"})), "non-ASCII text matches its \\u escapes")
	assert.Equal(t, []int64{cafeID}, pageJobIDs(search(driver.JobPageQuery{PayloadContains: "http://x"})), "a slash matches \\/")
}

func testDriverWorkflowPage(t *testing.T, d *DriverEnv) {
	var ids []int64
	for i := range 6 {
		wf := newWorkflow("order", driver.WorkflowRunning)
		if i%2 == 1 {
			wf.Status = driver.WorkflowFailed
		}
		wf.StartedAt = Epoch.Add(time.Duration(i) * time.Hour)
		ids = append(ids, d.insertWorkflow(wf))
	}
	page := func(q driver.WorkflowPageQuery) []int64 {
		t.Helper()
		p := inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Workflow], error) { return tx.WorkflowPage(d.Ctx, q) })
		out := make([]int64, len(p.Rows))
		for i, w := range p.Rows {
			assert.Nil(t, w.State, "no state is read")
			out[i] = w.ID
		}
		return out
	}
	assert.Equal(t, []int64{ids[5], ids[3]}, page(driver.WorkflowPageQuery{Status: driver.WorkflowFailed, Page: driver.Keyset{Limit: 2}}))
	assert.Equal(t, []int64{ids[1]}, page(driver.WorkflowPageQuery{Status: driver.WorkflowFailed, Page: driver.Keyset{BeforeID: ids[3]}}))
	assert.Equal(t, []int64{ids[1], ids[0]}, page(driver.WorkflowPageQuery{Page: driver.Keyset{Oldest: true, Limit: 2}}))
	assert.Equal(t, []int64{ids[3], ids[2]}, page(driver.WorkflowPageQuery{StartedFrom: Epoch.Add(2 * time.Hour), StartedTo: Epoch.Add(4 * time.Hour)}))
	assert.Equal(t, []int64{ids[2]}, page(driver.WorkflowPageQuery{ID: ids[2], Name: "order"}))
	assert.Empty(t, page(driver.WorkflowPageQuery{Name: "other"}))
}

func testDriverMachinePage(t *testing.T, d *DriverEnv) {
	var ids []int64
	for i := range 5 {
		m := &driver.Machine{Name: "door", Status: queuetytype.MachineRunning, CurrentState: "open", State: []byte(`{}`),
			Definition: []byte(`{}`), StartedAt: Epoch, UpdatedAt: Epoch}
		if i%2 == 1 {
			m.Status = queuetytype.MachineCompleted
		}
		d.Tx(func(tx driver.Tx) error { return tx.MachineInsert(d.Ctx, m) })
		ids = append(ids, m.ID)
	}
	page := func(q driver.MachinePageQuery) []int64 {
		t.Helper()
		p := inTx(d, func(tx driver.Tx) (*driver.Page[*driver.Machine], error) { return tx.MachinePage(d.Ctx, q) })
		out := make([]int64, len(p.Rows))
		for i, m := range p.Rows {
			assert.Nil(t, m.State, "no state is read")
			assert.Equal(t, "door", m.Name)
			out[i] = m.ID
		}
		return out
	}
	assert.Equal(t, []int64{ids[4], ids[3]}, page(driver.MachinePageQuery{Page: driver.Keyset{Limit: 2}}))
	assert.Equal(t, []int64{ids[2], ids[1]}, page(driver.MachinePageQuery{Page: driver.Keyset{Limit: 2, BeforeID: ids[3]}}))
	assert.Equal(t, []int64{ids[1], ids[0]}, page(driver.MachinePageQuery{Page: driver.Keyset{Limit: 2, Oldest: true}}))
	assert.Equal(t, []int64{ids[3], ids[2]}, page(driver.MachinePageQuery{Page: driver.Keyset{Limit: 2, AfterID: ids[1]}}))
	assert.Equal(t, []int64{ids[3], ids[1]}, page(driver.MachinePageQuery{Status: queuetytype.MachineCompleted}))
	assert.Empty(t, page(driver.MachinePageQuery{Name: "window"}))
}
