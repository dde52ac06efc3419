package ui

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

var jobRow = regexp.MustCompile(`<tr data-job="(\d+)"`)

// rowIDs returns the job ids of a jobs page's rows, in page order.
func rowIDs(t *testing.T, body string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range jobRow.FindAllStringSubmatch(body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

// link returns the href of the element with the id, unescaped and
// relative to the server ("" when there is none).
func link(body, id string) string {
	m := regexp.MustCompile(`href="([^"]*)" id="` + id + `"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// dispatchN dispatches n jobs on queue q, oldest first, and returns their
// ids.
func dispatchN(t *testing.T, c *queuety.Client, q string, n int) []int64 {
	t.Helper()
	var reqs []queuety.JobRequest
	for i := range n {
		reqs = append(reqs, queuety.JobRequest{Handler: "page.job", Payload: queuety.State{"n": i, "tag": fmt.Sprintf("needle-%03d", i)},
			Options: []queuety.JobOption{queuety.OnQueue(q)}})
	}
	ids, err := c.DispatchMany(context.Background(), reqs)
	require.NoError(t, err)
	return ids
}

// reversed returns ids newest first.
func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// TestJobsPagesNewestFirst: the jobs list runs newest first, fifty to a
// page, with links to the newest, newer, older and oldest pages that
// walk it from both ends.
func TestJobsPagesNewestFirst(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ids := reversed(dispatchN(t, c, "paged", 2*jobsPerPage+7)) // newest first
		b := newBrowser(t, Handler(c, open))

		first := b.get("/jobs?queue=paged")
		require.Equal(t, http.StatusOK, first.StatusCode, first.body)
		assert.Equal(t, ids[:jobsPerPage], rowIDs(t, first.body), "the first page: the newest fifty, newest first")
		assert.Empty(t, link(first.body, "prev-page"), "no newer page")
		assert.Empty(t, link(first.body, "first-page"))

		second := b.get(link(first.body, "next-page"))
		assert.Equal(t, ids[jobsPerPage:2*jobsPerPage], rowIDs(t, second.body), "older")
		assert.Contains(t, link(second.body, "next-page"), "queue=paged", "the filter is kept")

		last := b.get(link(first.body, "last-page"))
		assert.Equal(t, ids[len(ids)-jobsPerPage:], rowIDs(t, last.body), "the oldest fifty, newest first")
		assert.Empty(t, link(last.body, "next-page"), "nothing older than the last page")

		back := b.get(link(last.body, "prev-page"))
		assert.Equal(t, ids[len(ids)-2*jobsPerPage:len(ids)-jobsPerPage], rowIDs(t, back.body), "newer than the last page")
		newest := b.get(link(back.body, "first-page"))
		assert.Equal(t, ids[:jobsPerPage], rowIDs(t, newest.body), "the newest page again")

		wfs := b.get("/workflows?before=x")
		assert.Equal(t, http.StatusBadRequest, wfs.StatusCode)
	})
}

// TestWorkflowsPagesNewestFirst: the workflows list pages from both ends
// and searches by id, status and start time.
func TestWorkflowsPagesNewestFirst(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		var ids []int64
		for range 5 {
			id, err := builder.Workflow("paged.flow").Then("a").Dispatch(ctx, c, nil)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		b := newBrowser(t, Handler(c, open))
		wfRow := regexp.MustCompile(`<tr data-workflow="(\d+)"`)
		rows := func(body string) []string {
			var out []string
			for _, m := range wfRow.FindAllStringSubmatch(body, -1) {
				out = append(out, m[1])
			}
			return out
		}
		str := func(ids ...int64) []string {
			var out []string
			for _, id := range ids {
				out = append(out, strconv.FormatInt(id, 10))
			}
			return out
		}
		page := b.get("/workflows?limit=2")
		assert.Equal(t, str(ids[4], ids[3]), rows(page.body))
		page = b.get(link(page.body, "next-page"))
		assert.Equal(t, str(ids[2], ids[1]), rows(page.body))
		page = b.get(link(page.body, "last-page"))
		assert.Equal(t, str(ids[1], ids[0]), rows(page.body))
		assert.Equal(t, str(ids[2]), rows(b.get(fmt.Sprintf("/workflows?id=%d", ids[2])).body), "by id")
		future := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04")
		past := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
		assert.Empty(t, rows(b.get("/workflows?started_from="+future).body), "started after now: none")
		res := b.get("/workflows?started_from=" + past + "&started_to=" + future)
		assert.Len(t, rows(res.body), 5, "started within the last hour")
		assert.Contains(t, res.body, `id="scan-note"`, "a time search says it is bounded")
		assert.Equal(t, http.StatusBadRequest, b.get("/workflows?started_from=yesterday").StatusCode)
	})
}

// TestJobSearch: the jobs page finds jobs by payload substring, id and
// creation time; a search no index serves says how far it reads.
func TestJobSearch(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ids := dispatchN(t, c, "search", 30)
		b := newBrowser(t, Handler(c, open))

		res := b.get("/jobs?payload=NEEDLE-017")
		require.Equal(t, http.StatusOK, res.StatusCode, res.body)
		assert.Equal(t, []int64{ids[17]}, rowIDs(t, res.body), "payload substring, case ignored")
		assert.Contains(t, res.body, "reads at most 10000 jobs per page", "the page says the search is bounded")
		assert.Contains(t, res.body, `value="NEEDLE-017"`, "the form keeps the search")

		assert.Equal(t, []int64{ids[3]}, rowIDs(t, b.get(fmt.Sprintf("/jobs?id=%d", ids[3])).body), "by id")
		assert.Len(t, rowIDs(t, b.get("/jobs?payload="+url.QueryEscape("needle-01")).body), 10, "needle-010 to needle-019")
		future := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04")
		assert.Empty(t, rowIDs(t, b.get("/jobs?queue=search&created_from="+future).body), "created after now: none")
		assert.Len(t, rowIDs(t, b.get("/jobs?queue=search&created_to="+future).body), 30)
		bad := b.get("/jobs?created_from=soon")
		assert.Equal(t, http.StatusBadRequest, bad.StatusCode)
		assert.Contains(t, bad.body, "is not a time")
	})
}

// TestBulkJobActions: ticking jobs and choosing an action first asks to
// confirm with the count, then retries, buries or deletes each through
// the operator actions; the rows are as a single retry leaves them.
func TestBulkJobActions(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		ids := dispatchN(t, c, "bulk", 4)
		for _, id := range ids[:3] {
			require.NoError(t, c.BuryJob(ctx, id, "broken"))
		}
		b := newBrowser(t, Handler(c, open))
		page := b.get("/jobs?queue=bulk")
		assert.Contains(t, page.body, `id="bulk-jobs"`, "the bulk form")
		assert.Contains(t, page.body, fmt.Sprintf(`name="id" value="%d" form="bulk-jobs"`, ids[0]), "a box per row")

		form := url.Values{"action": {"retry"}, "back": {"/jobs?queue=bulk"}}
		for _, id := range ids[:3] {
			form.Add("id", strconv.FormatInt(id, 10))
		}
		ask := b.post("/jobs/bulk", form)
		require.Equal(t, http.StatusOK, ask.StatusCode, ask.body)
		assert.Contains(t, ask.body, "Retry 3 jobs?", "the confirmation names the count")
		for _, id := range ids[:3] {
			assert.Equal(t, queuetytype.JobBuried, jobStatus(t, c, id), "nothing changes before the confirmation")
		}

		form.Set("confirm", "1")
		done := b.post("/jobs/bulk", form)
		require.Equal(t, http.StatusSeeOther, done.StatusCode, done.body)
		assert.Equal(t, "/jobs?queue=bulk", done.Header.Get("Location"))
		assert.Contains(t, b.get("/jobs?queue=bulk").body, "Retried 3 jobs.")
		for _, id := range ids[:3] {
			j, err := c.Job(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, queuetytype.JobPending, j.Status, "job %d", id)
			assert.Zero(t, j.Attempts, "job %d: fresh attempts", id)
			assert.Empty(t, j.ErrorMessage, "job %d: the error is cleared", id)
			assert.True(t, j.FailedAt.IsZero(), "job %d: failed_at cleared", id)
		}

		// A refusal is reported per job; the others go through.
		wf, err := builder.Workflow("bulk.flow").Then("a").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		steps, err := c.ListJobs(ctx, queuetytype.JobFilter{WorkflowID: wf})
		require.NoError(t, err)
		require.Len(t, steps, 1)
		require.NoError(t, c.BuryJob(ctx, ids[3], "again"))
		mixed := url.Values{"action": {"retry"}, "confirm": {"1"}, "id": {strconv.FormatInt(ids[3], 10), strconv.FormatInt(ids[0], 10)}}
		require.Equal(t, http.StatusSeeOther, b.post("/jobs/bulk", mixed).StatusCode)
		msg := b.get("/jobs").body
		assert.Contains(t, msg, "Retried 1 of 2 jobs.")
		assert.Contains(t, msg, fmt.Sprintf("job %d:", ids[0]), "the refused job is named")
		assert.Equal(t, queuetytype.JobPending, jobStatus(t, c, ids[3]))

		del := url.Values{"action": {"delete"}, "confirm": {"1"}, "id": {strconv.FormatInt(ids[1], 10), strconv.FormatInt(ids[2], 10)}}
		require.Equal(t, http.StatusSeeOther, b.post("/jobs/bulk", del).StatusCode)
		for _, id := range ids[1:3] {
			_, err := c.Job(ctx, id)
			assert.ErrorIs(t, err, queuetytype.ErrNotFound, "job %d deleted", id)
		}
	})
}

// TestBulkWorkflowActions: workflows are cancelled and retried in bulk.
func TestBulkWorkflowActions(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		b := newBrowser(t, Handler(c, open))
		ask := b.post("/workflows/bulk", url.Values{"action": {"cancel"}, "id": {strconv.FormatInt(f.waiting, 10), strconv.FormatInt(f.approval, 10)}})
		require.Equal(t, http.StatusOK, ask.StatusCode, ask.body)
		assert.Contains(t, ask.body, "Cancel 2 workflows?")
		res := b.post("/workflows/bulk", url.Values{"action": {"cancel"}, "confirm": {"1"}, "back": {"/workflows"},
			"id": {strconv.FormatInt(f.waiting, 10), strconv.FormatInt(f.approval, 10)}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
		assert.Equal(t, queuetytype.WorkflowCancelled, workflowStatus(t, c, f.waiting))
		assert.Equal(t, queuetytype.WorkflowCancelled, workflowStatus(t, c, f.approval))
		assert.Contains(t, b.get("/workflows").body, "Cancelled 2 workflows.")

		res = b.post("/workflows/bulk", url.Values{"action": {"retry"}, "confirm": {"1"}, "id": {strconv.FormatInt(f.failed, 10)}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.failed))
	})
}

// TestBulkActionsRefused: a bulk action needs the CSRF token, is refused
// on a read-only UI (which shows no boxes), and takes at most bulkMax
// rows.
func TestBulkActionsRefused(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	ids := dispatchN(t, c, "bulk", 2)
	require.NoError(t, c.BuryJob(ctx, ids[0], "broken"))
	form := url.Values{"action": {"retry"}, "confirm": {"1"}, "id": {strconv.FormatInt(ids[0], 10)}}

	b := newBrowser(t, Handler(c, open))
	b.get("/jobs")                                        // the CSRF cookie
	res := b.do(http.MethodPost, "/jobs/bulk", form, nil) // no csrf field
	assert.Equal(t, http.StatusForbidden, res.StatusCode, res.body)
	assert.Contains(t, res.body, "CSRF token")
	assert.Equal(t, queuetytype.JobBuried, jobStatus(t, c, ids[0]), "refused without the CSRF token")

	ro := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, ReadOnly: true, Logger: quiet()}))
	page := ro.get("/jobs")
	assert.NotContains(t, page.body, `id="bulk-jobs"`, "no bulk form on a read-only UI")
	assert.NotContains(t, page.body, `class="pick"`, "no boxes")
	ro.csrf = "none" // refused before the token is looked at
	res = ro.post("/jobs/bulk", form)
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Contains(t, res.body, "read-only")
	res = ro.post("/workflows/bulk", url.Values{"action": {"cancel"}, "confirm": {"1"}, "id": {"1"}})
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Contains(t, res.body, "read-only")
	assert.Equal(t, queuetytype.JobBuried, jobStatus(t, c, ids[0]), "refused on a read-only UI")

	many := url.Values{"action": {"retry"}}
	for i := range bulkMax + 1 {
		many.Add("id", strconv.Itoa(i+1))
	}
	res = b.post("/jobs/bulk", many)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, res.body, fmt.Sprintf("at most %d", bulkMax))
	assert.Equal(t, http.StatusBadRequest, b.post("/jobs/bulk", url.Values{"action": {"retry"}}).StatusCode, "nothing ticked")
	assert.Equal(t, http.StatusBadRequest, b.post("/jobs/bulk", url.Values{"action": {"explode"}, "id": {"1"}}).StatusCode)
}

// TestInternalJobsAndDue: the engine's own jobs are hidden from the jobs
// list unless asked for, and marked when shown; a job that is not
// pending shows its status where a pending one shows when it is due (a
// buried delay step of a cancelled workflow is not "due in 59m").
func TestInternalJobsAndDue(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		wf, err := builder.Workflow("sleepy").Sleep(time.Hour).Then("a").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		steps, err := c.ListJobs(ctx, queuetytype.JobFilter{WorkflowID: wf})
		require.NoError(t, err)
		require.Len(t, steps, 1)
		delay := steps[0]
		require.True(t, strings.HasPrefix(delay.Handler, "__queuety_"), "the sleep is an internal job: %s", delay.Handler)
		plain, err := c.Dispatch(ctx, "user.job", nil)
		require.NoError(t, err)

		b := newBrowser(t, Handler(c, open))
		res := b.get("/jobs")
		assert.Equal(t, []int64{plain}, rowIDs(t, res.body), "internal jobs hidden by default")
		res = b.get("/jobs?internal=1")
		assert.Equal(t, []int64{plain, delay.ID}, rowIDs(t, res.body), "shown when asked for, newest first")
		assert.Contains(t, res.body, `class="badge internal"`, "and marked")
		assert.Contains(t, res.body, fmt.Sprintf(`<tr data-job="%d" class="internal">`, delay.ID))
		assert.Equal(t, []int64{delay.ID}, rowIDs(t, b.get(fmt.Sprintf("/jobs?workflow=%d", wf)).body), "a workflow's steps show its internal jobs")
		dueSoon := regexp.MustCompile(`>in (59m|1h00m)</time>`)
		assert.Regexp(t, dueSoon, res.body, "a pending delay is due in an hour")

		require.NoError(t, c.CancelWorkflow(ctx, wf))
		require.Equal(t, queuetytype.JobBuried, jobStatus(t, c, delay.ID))
		res = b.get("/jobs?internal=1&status=buried")
		require.Equal(t, []int64{delay.ID}, rowIDs(t, res.body))
		assert.NotRegexp(t, dueSoon, res.body, "a buried job has no due time")
		assert.Contains(t, res.body, `<td class="due"><span class="muted">buried</span></td>`)
		job := b.get(fmt.Sprintf("/jobs/%d", delay.ID))
		assert.NotContains(t, job.body, `id="job-due"`, "the job page shows no due time either")
	})
}

// TestJobPageNamesItsWorker: the page of a running job names the worker
// that holds it, linked to the worker's row on the workers page, which
// links the job back.
func TestJobPageNamesItsWorker(t *testing.T) {
	eachStore(t, func(t *testing.T, store *queuety.Client) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		c := clientseam.NewClient(clientseam.StoreOf(store), queuety.WithClock(queuety.NewFakeClock(now)),
			queuety.WithLogger(quiet())).(*queuety.Client)
		release := make(chan struct{})
		w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.Queues("held"), worker.Concurrency(2),
			worker.LeaseInterval(50*time.Millisecond), worker.PollInterval(10*time.Millisecond))
		w.HandleJob("hold", func(context.Context, queuety.Payload) error { <-release; return nil })
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		defer func() {
			close(release)
			cancel()
			assert.NoError(t, <-done)
		}()
		id, err := c.Dispatch(ctx, "hold", nil, queuety.OnQueue("held"))
		require.NoError(t, err)
		waiting, err := c.Dispatch(ctx, "nobody.handles", nil, queuety.OnQueue("elsewhere"))
		require.NoError(t, err)
		var holder string
		require.Eventually(t, func() bool {
			ws, err := c.Workers(ctx)
			if err != nil {
				return false
			}
			i := slices.IndexFunc(ws, func(w *queuetytype.Worker) bool { return w.PID == os.Getpid() && slices.Contains(w.Jobs, id) })
			if i < 0 {
				return false
			}
			holder = ws[i].ID
			return true
		}, 30*time.Second, 10*time.Millisecond, "the registry does not list the worker with its job")

		b := newBrowser(t, Handler(c, open))
		res := b.get(fmt.Sprintf("/jobs/%d", id))
		require.Equal(t, http.StatusOK, res.StatusCode, res.body)
		assert.Contains(t, res.body, fmt.Sprintf(`<a class="mono" href="/workers#worker-%s">%s</a>`, holder, holder), "held by")
		workers := b.get("/workers")
		assert.Contains(t, workers.body, fmt.Sprintf(`id="worker-%s"`, holder), "the link's target")
		assert.Contains(t, workers.body, fmt.Sprintf(`<a href="/jobs/%d">%d</a>`, id, id), "the worker links its job")
		assert.NotContains(t, b.get(fmt.Sprintf("/jobs/%d", waiting)).body, `id="job-holder"`, "a pending job is held by nobody")
	})
}

// TestJobListReadsNoPayloads: a jobs page, a payload search among them
// included, allocates less than one of the large payloads it lists.
func TestJobListReadsNoPayloads(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		const size = 1 << 20
		for range 4 {
			_, err := c.Dispatch(context.Background(), "import", queuety.State{"blob": bigString(size)}, queuety.OnQueue("big"))
			require.NoError(t, err)
		}
		b := newBrowser(t, Handler(c, open))
		for _, path := range []string{"/jobs?queue=big", "/jobs?payload=payload-%E2%82%AC", "/jobs?last=1", "/jobs?payload=absent"} {
			require.Equal(t, http.StatusOK, b.get(path).StatusCode)
			var res *response
			n := allocated(func() { res = b.get(path) })
			require.Equal(t, http.StatusOK, res.StatusCode)
			t.Logf("%s allocated %d KiB with 4 payloads of %d KiB", path, n>>10, size>>10)
			assert.Less(t, n, uint64(size), "%s allocates less than one payload's size", path)
		}
		assert.Len(t, rowIDs(t, b.get("/jobs?payload=payload-%E2%82%AC").body), 4, "the search finds them")
	})
}

// TestMachinesPages: the machines list pages newest first like the
// others, keeping its status filter.
func TestMachinesPages(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		var ids []int64
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			for range machinesPerPage + 2 {
				m := &driver.Machine{Name: "door", Status: queuetytype.MachineRunning, CurrentState: "open", State: []byte(`{}`),
					Definition: []byte(`{}`), StartedAt: time.Now(), UpdatedAt: time.Now()}
				if err := tx.MachineInsert(ctx, m); err != nil {
					return err
				}
				ids = append(ids, m.ID)
			}
			return nil
		}))
		row := regexp.MustCompile(`<tr data-machine="(\d+)"`)
		rows := func(body string) []int64 {
			var out []int64
			for _, m := range row.FindAllStringSubmatch(body, -1) {
				id, _ := strconv.ParseInt(m[1], 10, 64)
				out = append(out, id)
			}
			return out
		}
		b := newBrowser(t, Handler(c, open))
		first := b.get("/machines?status=running")
		require.Equal(t, http.StatusOK, first.StatusCode, first.body)
		assert.Equal(t, reversed(ids)[:machinesPerPage], rows(first.body), "the newest hundred")
		next := link(first.body, "next-page")
		assert.Contains(t, next, "status=running")
		assert.Equal(t, []int64{ids[1], ids[0]}, rows(b.get(next).body), "the two oldest")
		assert.Equal(t, reversed(ids)[2:], rows(b.get(link(first.body, "last-page")).body), "the oldest hundred")
	})
}

// TestListPagesStatementsBounded: on MySQL a jobs page, a payload search
// and a workflows page each run no more statements with many rows than
// with a few; every page carries the strict Content-Security-Policy, the
// live part included.
func TestListPagesStatementsBounded(t *testing.T) {
	c := openStore(t, "mysql")
	ms, ok := clientseam.StoreOf(c).(*mysql.Store)
	require.True(t, ok)
	b := newBrowser(t, Handler(c, open))
	paths := []string{"/jobs", "/jobs?payload=needle&last=1", "/jobs?status=pending&before=1000000", "/workflows", "/machines"}
	count := func() []int64 {
		var out []int64
		for _, p := range paths {
			out = append(out, testdb.CountStatements(t, ms.DB, func() { require.Equal(t, http.StatusOK, b.get(p).StatusCode, p) }))
		}
		return out
	}
	dispatchN(t, c, "few", 3)
	few := count()
	dispatchN(t, c, "many", 300)
	for i := range 20 {
		dispatchN(t, c, fmt.Sprintf("q%02d", i), 1)
	}
	many := count()
	t.Logf("statements per page (%v): %v with 3 jobs, %v with 323", paths, few, many)
	for i, p := range paths {
		// A short page runs one more statement (where its search stopped).
		assert.LessOrEqual(t, many[i], few[i], "statements of %s", p)
	}
	for _, p := range []string{"/jobs", "/jobs?partial=1", "/workflows?partial=1"} {
		csp := b.get(p).Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self';", p)
		assert.Contains(t, csp, "style-src 'self';", p)
		assert.NotContains(t, csp, "unsafe", p)
	}
}
