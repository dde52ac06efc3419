package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestPagesRender loads every page, and the live part of the list pages,
// on a store a worker filled, and checks that each shows its data.
func TestPagesRender(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		b := newBrowser(t, Handler(c, open))
		pages := []struct {
			path string
			want []string
		}{
			{"/", []string{`id="queues"`, `data-queue="mail"`, `data-queue="default"`, "Completed, last 15m", `<svg class="spark"`}},
			{"/?partial=1", []string{`data-queue="mail"`}},
			{"/jobs", []string{"email.send", "report.build", `id="jobs"`}},
			{"/jobs?status=buried", []string{"disk full", "Retry all buried", fmt.Sprintf(`data-job="%d"`, f.buried)}},
			{"/jobs?queue=mail&status=pending", []string{fmt.Sprintf(`data-job="%d"`, f.delayed)}},
			{"/jobs?status=completed&partial=1", []string{fmt.Sprintf(`data-job="%d"`, f.mailJobs[0])}},
			{fmt.Sprintf("/jobs?workflow=%d", f.failed), []string{"order.explode", "payment gateway down"}},
			{fmt.Sprintf("/jobs/%d", f.buried), []string{"report.build", "disk full", "monthly", `id="job-logs"`, "buried"}},
			{fmt.Sprintf("/jobs/%d", f.mailJobs[0]), []string{"email.send", "usera@example.com", "completed"}},
			{"/workflows", []string{"order.fulfil", "refund.review", "order.quick", "waiting_for_signal"}},
			{"/workflows?status=failed", []string{fmt.Sprintf(`data-workflow="%d"`, f.failed), "payment gateway down"}},
			{"/workflows?status=failed&partial=1", []string{fmt.Sprintf(`data-workflow="%d"`, f.failed)}},
			{fmt.Sprintf("/workflows/%d", f.waiting), []string{"order.fulfil", "wait_for_shipped", "<code>shipped</code>",
				`id="signal-form"`, `id="timeline"`, "order.charge", "charged_cents"}},
			{fmt.Sprintf("/workflows/%d", f.approval), []string{"refund.review", `id="signal-form"`, "Approve"}},
			{fmt.Sprintf("/workflows/%d", f.failed), []string{"payment gateway down", `id="failure-categories"`, "application", "Retry"}},
			{fmt.Sprintf("/workflows/%d", f.done), []string{"completed", "notified"}},
			{"/schedules", []string{"cleanup.sessions", "3600 seconds", "Run now", "Disable"}},
		}
		for _, p := range pages {
			res := b.get(p.path)
			require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", p.path, res.body)
			assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), p.path)
			for _, w := range p.want {
				assert.Contains(t, res.body, w, "GET %s", p.path)
			}
			if strings.Contains(p.path, "partial=1") {
				assert.NotContains(t, res.body, "<html", "GET %s is only the live part", p.path)
			}
		}

		res := b.get(fmt.Sprintf("/workflows/%d/trace.json", f.waiting))
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
		assert.Contains(t, res.Header.Get("Content-Disposition"), "attachment")
		var trace map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.body), &trace))
		assert.NotEmpty(t, trace)

		for _, asset := range []string{"/static/app.js", "/static/app.css", "/static/favicon.svg"} {
			res := b.get(asset)
			require.Equal(t, http.StatusOK, res.StatusCode, asset)
			assert.NotEmpty(t, res.body)
		}
	})
}

// TestOverviewNumbers checks the overview's queue figures against the
// fixture: depth by status, throughput from the log rows, the paused flag.
func TestOverviewNumbers(t *testing.T) {
	c := openStore(t, "sqlite")
	seed(t, c)
	require.NoError(t, c.PauseQueue(context.Background(), "maintenance"))
	s := newServer(c, open)
	d, err := s.overview(context.Background())
	require.NoError(t, err)
	byName := map[string]*queueRow{}
	for _, q := range d.Queues {
		byName[q.Name] = q
	}
	require.Contains(t, byName, "mail")
	mail := byName["mail"]
	assert.EqualValues(t, 6, mail.Completed)
	assert.EqualValues(t, 1, mail.Pending, "the delayed job")
	assert.False(t, mail.HasDue, "the only pending job is not due yet")
	assert.EqualValues(t, 6, mail.Done, "completed log rows within the window")
	require.NotNil(t, mail.Spark)
	assert.Len(t, mail.Spark.Bars, 15)
	def := byName["default"]
	assert.EqualValues(t, 2, def.Buried, "report.build and the failed workflow's step")
	assert.True(t, byName["maintenance"].Paused)
	wfs := map[string]int64{}
	for _, w := range d.Workflows {
		wfs[w.Status] = w.Count
	}
	assert.Equal(t, map[string]int64{"running": 0, "waiting_for_signal": 2, "waiting_for_workflows": 0, "paused": 0,
		"completed": 1, "failed": 1, "cancelled": 0}, wfs)
	assert.EqualValues(t, 4, d.WfTotal)
	assert.EqualValues(t, 1, d.Schedules.Enabled)
	assert.GreaterOrEqual(t, d.Totals.Done, int64(6))

	// Work finished over the last ten minutes fills ten one-minute bars,
	// and a job due for ten minutes is the queue's oldest due one.
	spreadWork(t, c, 10)
	d, err = s.overview(context.Background())
	require.NoError(t, err)
	byName = map[string]*queueRow{}
	for _, q := range d.Queues {
		byName[q.Name] = q
	}
	var filled int
	for _, b := range byName["mail"].Spark.Bars {
		if b.H > 1 {
			filled++
		}
	}
	assert.GreaterOrEqual(t, filled, 10, "bars with completions")
	assert.Greater(t, byName["mail"].Done, int64(6+10*2))
	require.Contains(t, byName, "images")
	assert.True(t, byName["images"].HasDue)
	assert.InDelta(t, 10*time.Minute, byName["images"].OldestDue, float64(time.Minute))
}

// TestBadInput checks that bad ids, filters, actions and payloads end in
// a clear error page with the right status, never a panic.
func TestBadInput(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		b := newBrowser(t, Handler(c, open))
		for path, want := range map[string]struct {
			status int
			text   string
		}{
			"/jobs/999999":                 {http.StatusNotFound, "Not found: there is no such"},
			"/jobs/abc":                    {http.StatusBadRequest, "is not a job id"},
			"/jobs/-4":                     {http.StatusBadRequest, "is not a job id"},
			"/workflows/999999":            {http.StatusNotFound, "Not found: there is no such"},
			"/workflows/1x":                {http.StatusBadRequest, "is not a workflow id"},
			"/workflows/999999/trace.json": {http.StatusNotFound, "Not found: there is no such"},
			"/jobs?status=lost":            {http.StatusBadRequest, "Unknown job status"},
			"/jobs?after=x":                {http.StatusBadRequest, "not an id"},
			"/workflows?status=x":          {http.StatusBadRequest, "Unknown workflow status"},
			"/workflows?limit=-1":          {http.StatusBadRequest, "not a positive number"},
			"/nope":                        {http.StatusNotFound, "There is no page"},
		} {
			res := b.get(path)
			assert.Equal(t, want.status, res.StatusCode, "GET %s", path)
			assert.Contains(t, res.body, want.text, "GET %s", path)
			assert.Contains(t, res.body, `id="error"`, "GET %s renders the error page", path)
		}

		sig := fmt.Sprintf("/workflows/%d/signal", f.waiting)
		res := b.post(sig, map[string][]string{"name": {"shipped"}, "payload": {"{not json"}})
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		assert.Contains(t, res.body, "must be a JSON object")
		res = b.post(sig, map[string][]string{"name": {"shipped"}, "payload": {"[1, 2]"}})
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		res = b.post(sig, map[string][]string{"name": {"shipped"}, "payload": {`{"a": 1} {"b": 2}`}})
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		res = b.post(sig, map[string][]string{"name": {""}})
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
		assert.Contains(t, res.body, "needs a name")
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, f.waiting), "no bad signal reached the workflow")

		res = b.post(fmt.Sprintf("/workflows/%d/approve", f.approval), map[string][]string{"payload": {"nope"}})
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)

		res = b.post("/workflows/999999/cancel", nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		res = b.post(fmt.Sprintf("/workflows/%d/explode", f.waiting), nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		res = b.post(fmt.Sprintf("/workflows/%d/retry", f.waiting), nil)
		assert.Equal(t, http.StatusConflict, res.StatusCode, "retrying a workflow that did not fail")
		res = b.post(fmt.Sprintf("/jobs/%d/retry", f.mailJobs[0]), nil)
		assert.Equal(t, http.StatusConflict, res.StatusCode, "retrying a completed job")
		res = b.post("/jobs/999999/retry", nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		res = b.post("/jobs/999999/delete", nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode, "deleting an unknown job")
		res = b.post("/schedules/999999/run", nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		res = b.post("/queues/pause", nil)
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)

		res = b.get("/queues/pause")
		assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, "actions are POST only")
	})
}

// TestSecurityHeaders checks the headers on a page, an error page and an
// asset.
func TestSecurityHeaders(t *testing.T) {
	c := openStore(t, "sqlite")
	b := newBrowser(t, Handler(c, open))
	for _, path := range []string{"/", "/jobs/999", "/static/app.js"} {
		res := b.get(path)
		h := res.Header
		csp := h.Get("Content-Security-Policy")
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.NotContains(t, csp, "unsafe-inline", path)
		assert.Contains(t, csp, "frame-ancestors 'none'", path)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		assert.NotEmpty(t, h.Get("Referrer-Policy"), path)
	}
	res := b.get("/")
	assert.NotContains(t, res.body, "<script>", "no inline script")
	assert.NotContains(t, res.body, " style=", "no inline style")
}

// TestListPagesShareTabsAndBulkForm: the jobs and workflows lists both
// render the shared status tabs (all, then each status with its count,
// the chosen one marked) and the shared start of their bulk forms (the
// CSRF token, the page to come back to, the count of rows picked and
// Retry), each inside its own form.
func TestListPagesShareTabsAndBulkForm(t *testing.T) {
	c := openStore(t, "sqlite")
	seed(t, c)
	b := newBrowser(t, Handler(c, open))
	for _, p := range []struct{ path, status, form string }{
		{"/jobs?status=buried", "buried", `id="bulk-jobs"`},
		{"/workflows?status=failed", "failed", `id="bulk-workflows"`},
	} {
		res := b.get(p.path)
		require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", p.path, res.body)
		body := res.body
		assert.Contains(t, body, `<nav class="tabs" aria-label="Status">`, p.path)
		assert.Regexp(t, `<a href="[^"]*"\s*>all <b>\d+</b></a>`, body, "%s: the all tab, not chosen", p.path)
		assert.Regexp(t, `<a href="[^"]*status=`+p.status+`" class="on">`+p.status+` <b>\d+</b></a>`, body, "%s: the chosen tab", p.path)
		form := body[strings.Index(body, p.form):]
		form = form[:strings.Index(form, "</form>")]
		assert.Regexp(t, `<input type="hidden" name="csrf" value="[^"]+">`, form, p.path)
		assert.Contains(t, form, `<input type="hidden" name="back" value="`+p.path+`">`, p.path)
		assert.Contains(t, form, `<b id="picked">0</b> selected`, p.path)
		assert.Contains(t, form, `<button type="submit" name="action" value="retry" class="btn primary">Retry…</button>`, p.path)
	}
}
