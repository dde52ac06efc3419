package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// TestWorkflowActions drives every workflow action through the UI and
// checks the rows after each.
func TestWorkflowActions(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		f := seed(t, c)
		b := newBrowser(t, Handler(c, open))
		post := func(path string, form url.Values) *response {
			t.Helper()
			res := b.post(path, form)
			require.Equal(t, http.StatusSeeOther, res.StatusCode, "POST %s: %s", path, res.body)
			return res
		}

		// A signal with a payload settles the wait; the next step is enqueued.
		res := post(fmt.Sprintf("/workflows/%d/signal", f.waiting), url.Values{"name": {"shipped"}, "payload": {`{"carrier": "ups", "parcels": 2}`}})
		assert.Equal(t, fmt.Sprintf("/workflows/%d", f.waiting), res.Header.Get("Location"))
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.waiting))
		st, err := c.State(ctx, f.waiting)
		require.NoError(t, err)
		assert.Contains(t, fmt.Sprint(st), "ups")
		page := b.get(fmt.Sprintf("/workflows/%d", f.waiting))
		assert.Contains(t, page.body, "Signal shipped sent")
		assert.Contains(t, page.body, `id="signals"`)

		// Pause, resume, cancel.
		post(fmt.Sprintf("/workflows/%d/pause", f.waiting), nil)
		assert.Equal(t, queuetytype.WorkflowPaused, workflowStatus(t, c, f.waiting))
		post(fmt.Sprintf("/workflows/%d/resume", f.waiting), nil)
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.waiting))
		post(fmt.Sprintf("/workflows/%d/cancel", f.waiting), nil)
		assert.Equal(t, queuetytype.WorkflowCancelled, workflowStatus(t, c, f.waiting))

		// Approve with data.
		post(fmt.Sprintf("/workflows/%d/approve", f.approval), url.Values{"payload": {`{"by": "ops"}`}})
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.approval))
		assert.Contains(t, b.get(fmt.Sprintf("/workflows/%d", f.approval)).body, "sent signal approval")

		// Retry the failed workflow.
		post(fmt.Sprintf("/workflows/%d/retry", f.failed), nil)
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.failed))
	})
}

// TestRejectAnswersADecision checks the reject button on a decision wait.
func TestRejectAnswersADecision(t *testing.T) {
	c := openStore(t, "sqlite")
	seed(t, c)
	ctx := context.Background()
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "refund.decide", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signals: []string{"approved", "rejected"}, Mode: queuetytype.WaitAny, ResultKey: "decision"},
	}}, nil)
	require.NoError(t, err)
	runWorker(t, c)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, id))
	b := newBrowser(t, Handler(c, open))
	res := b.post(fmt.Sprintf("/workflows/%d/reject", id), url.Values{"payload": {`{"reason": "duplicate"}`}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	assert.Contains(t, b.get(fmt.Sprintf("/workflows/%d", id)).body, "sent signal rejected")
	assert.NotEqual(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, id))
}

// TestAnswerButtonsFollowTheWait: the workflow page offers Approve and
// Reject only for a wait that takes them, an answer the wait cannot take
// is refused, and a form submitted twice stores one signal.
func TestAnswerButtonsFollowTheWait(t *testing.T) {
	c := openStore(t, "sqlite")
	f := seed(t, c)
	ctx := context.Background()
	decision, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "refund.decide", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signals: []string{"approved", "rejected"}, Mode: queuetytype.WaitAny, HumanWait: "decision", ResultKey: "decision"},
	}}, nil)
	require.NoError(t, err)
	runWorker(t, c)
	b := newBrowser(t, Handler(c, open))
	page := func(id int64) string { return b.get(fmt.Sprintf("/workflows/%d", id)).body }

	body := page(f.approval)
	assert.Contains(t, body, `id="approve"`, "an approval wait can be approved")
	assert.NotContains(t, body, `id="reject"`, "an approval wait cannot be rejected")
	body = page(decision)
	assert.Contains(t, body, `id="approve"`, "a decision can be approved")
	assert.Contains(t, body, `id="reject"`, "a decision can be rejected")
	for _, id := range []int64{f.waiting, f.done, f.failed} {
		assert.NotContains(t, page(id), `id="answer-form"`, "workflow %d has no wait that takes an answer", id)
	}

	signals := func(id int64) int {
		d, err := c.DescribeWorkflow(ctx, id)
		require.NoError(t, err)
		return len(d.Signals)
	}
	res := b.post(fmt.Sprintf("/workflows/%d/reject", f.approval), nil)
	assert.Equal(t, http.StatusConflict, res.StatusCode, "reject of an approval wait: %s", res.body)
	assert.Contains(t, res.body, "only a decision wait can be rejected")
	assert.Zero(t, signals(f.approval), "the refused reject stored a signal")
	res = b.post(fmt.Sprintf("/workflows/%d/approve", f.approval), url.Values{"payload": {`{"by": "ops"}`}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	res = b.post(fmt.Sprintf("/workflows/%d/approve", f.approval), url.Values{"payload": {`{"by": "ops"}`}})
	assert.Equal(t, http.StatusConflict, res.StatusCode, "the same form again: %s", res.body)
	assert.Contains(t, res.body, "is not waiting for an answer")
	assert.Equal(t, 1, signals(f.approval), "signals after the form was submitted twice")
}

// TestJobAndScheduleActions drives the job, bulk and schedule actions.
func TestJobAndScheduleActions(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		f := seed(t, c)
		// Two more buried jobs on another queue.
		for range 2 {
			_, err := c.Dispatch(ctx, "report.build", nil, queuety.MaxAttempts(1), queuety.OnQueue("mail"))
			require.NoError(t, err)
		}
		runWorker(t, c)
		b := newBrowser(t, Handler(c, open))

		// Bulk retry, limited to one queue: the buried step of the failed
		// workflow and the other queue's job stay buried.
		res := b.post("/jobs/retry-buried", url.Values{"queue": {"mail"}, "back": {"/jobs?status=buried&queue=mail"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
		assert.Contains(t, b.get("/jobs?status=buried&queue=mail").body, "Retried 2 buried jobs")
		assert.Equal(t, queuetytype.JobBuried, jobStatus(t, c, f.buried))
		res = b.post("/jobs/retry-buried", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		assert.Equal(t, queuetytype.JobPending, jobStatus(t, c, f.buried))
		steps, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: f.failed, Status: queuetytype.JobBuried})
		require.NoError(t, err)
		assert.Len(t, steps, 1, "a buried workflow step is retried with its workflow")

		// Schedules: disable, enable, run now.
		sched := func() *driver.Schedule {
			sc, err := c.ScheduleByID(ctx, f.schedule)
			require.NoError(t, err)
			return sc
		}
		require.Equal(t, http.StatusSeeOther, b.post(fmt.Sprintf("/schedules/%d/disable", f.schedule), nil).StatusCode)
		assert.False(t, sched().Enabled)
		require.Equal(t, http.StatusSeeOther, b.post(fmt.Sprintf("/schedules/%d/enable", f.schedule), nil).StatusCode)
		assert.True(t, sched().Enabled)
		require.Equal(t, http.StatusSeeOther, b.post(fmt.Sprintf("/schedules/%d/run", f.schedule), nil).StatusCode)
		ref := sched().LastRunRef
		require.NotZero(t, ref)
		j, err := c.Job(ctx, ref)
		require.NoError(t, err)
		assert.Equal(t, "cleanup.sessions", j.Handler)
		assert.Contains(t, b.get("/schedules").body, fmt.Sprintf("fired now: it dispatched %d", ref))
	})
}

// TestBuryAndDelete buries a pending job and deletes another through the
// UI, with the client's own operations, and checks the rows.
func TestBuryAndDelete(t *testing.T) {
	ctx := context.Background()
	c := openStore(t, "sqlite")
	f := seed(t, c)
	b := newBrowser(t, Handler(c, open))
	page := b.get(fmt.Sprintf("/jobs/%d", f.delayed))
	assert.Contains(t, page.body, fmt.Sprintf("/jobs/%d/bury", f.delayed))
	assert.Contains(t, page.body, fmt.Sprintf("/jobs/%d/delete", f.delayed))
	require.Equal(t, http.StatusSeeOther, b.post(fmt.Sprintf("/jobs/%d/bury", f.delayed), nil).StatusCode)
	j, err := c.Job(ctx, f.delayed)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "buried through the UI")

	res := b.post(fmt.Sprintf("/jobs/%d/delete", f.delayed), nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	assert.Equal(t, "/jobs", res.Header.Get("Location"), "a deleted job has no page to return to")
	_, err = c.Job(ctx, f.delayed)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "deleted through the UI")
	assert.Equal(t, http.StatusNotFound, b.post("/jobs/999999/bury", nil).StatusCode, "burying an unknown job")

	ro := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, ReadOnly: true, Logger: quiet()}))
	assert.NotContains(t, ro.get(fmt.Sprintf("/jobs/%d", f.mailJobs[0])).body, "/bury", "read-only pages have no actions")
}

// TestBasePath mounts the UI under a prefix, as an application does.
func TestBasePath(t *testing.T) {
	c := openStore(t, "sqlite")
	f := seed(t, c)
	mux := http.NewServeMux()
	mux.Handle("/ops/queuety/", Handler(c, Options{AllowUnauthenticated: true, BasePath: "/ops/queuety/", Logger: quiet()}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "app", http.StatusTeapot) })
	b := newBrowser(t, mux)
	res := b.get("/ops/queuety/")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.body, `href="/ops/queuety/static/app.css"`)
	assert.Contains(t, res.body, `href="/ops/queuety/jobs?queue=mail"`)
	assert.Equal(t, http.StatusOK, b.get("/ops/queuety/static/app.js").StatusCode)
	assert.Equal(t, http.StatusOK, b.get(fmt.Sprintf("/ops/queuety/workflows/%d", f.waiting)).StatusCode)
	assert.Equal(t, http.StatusTeapot, b.get("/jobs").StatusCode, "outside the prefix")

	res = b.post("/ops/queuety/queues/pause", url.Values{"queue": {"mail"}, "back": {"/"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
	assert.Equal(t, "/ops/queuety/", res.Header.Get("Location"))
	assert.Equal(t, []string{"mail"}, pausedQueues(t, c))
}

// TestPanicBecomesErrorPage: a panic in an action ends in a 500 error
// page, and the server goes on serving.
func TestPanicBecomesErrorPage(t *testing.T) {
	c := openStore(t, "sqlite")
	f := seed(t, c)
	s := newServer(c, Options{AllowUnauthenticated: true, Logger: quiet()})
	s.ops.bury = func(context.Context, int64, string) error { panic("boom") }
	b := newBrowser(t, s)
	res := b.post(fmt.Sprintf("/jobs/%d/bury", f.delayed), nil)
	assert.Equal(t, http.StatusInternalServerError, res.StatusCode)
	assert.Contains(t, res.body, "Internal error")
	assert.NotContains(t, res.body, "boom")
	assert.Equal(t, http.StatusOK, b.get("/").StatusCode)
}
