package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// batchFixture is a store with three batches a worker ran.
type batchFixture struct {
	mixed  int64 // five jobs: three completed, one buried, one pending (no worker has its handler)
	done   int64 // two completed jobs
	open   int64 // three pending jobs of a handler no worker has
	buried int64 // the buried job of mixed
}

// batchWork dispatches the batches and runs a worker until nothing is due.
func batchWork(t *testing.T, c *queuety.Client) batchFixture {
	t.Helper()
	ctx := context.Background()
	var f batchFixture
	req := func(h string, opts ...queuety.JobOption) queuety.JobRequest {
		return queuety.JobRequest{Handler: h, Options: opts}
	}
	var err error
	f.mixed, err = c.NewBatch(req("batch.ok"), req("batch.ok"), req("batch.ok"), req("batch.bad", queuety.MaxAttempts(1)), req("batch.later")).
		Name("import 2026-11").Then("batch.then").Catch("batch.catch").Finally("batch.finally").AllowFailures().Dispatch(ctx)
	require.NoError(t, err)
	f.done, err = c.NewBatch(req("batch.ok"), req("batch.ok")).Name("thumbnails").Then("batch.then").Dispatch(ctx)
	require.NoError(t, err)
	f.open, err = c.NewBatch(req("batch.later"), req("batch.later"), req("batch.later")).Finally("batch.finally").Dispatch(ctx)
	require.NoError(t, err)

	w := worker.New(c, worker.Concurrency(2), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond))
	w.HandleJob("batch.ok", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("batch.bad", func(context.Context, queuety.Payload) error { return errors.New("bad row 17") })
	for _, cb := range []string{"batch.then", "batch.catch", "batch.finally"} {
		w.HandleBatchCallback(cb, func(context.Context, *queuety.Batch) error { return nil })
	}
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	b, err := c.Batch(ctx, f.mixed)
	require.NoError(t, err)
	require.Len(t, b.FailedJobIDs, 1)
	f.buried = b.FailedJobIDs[0]
	return f
}

// TestBatchesBrowser shows the batches and a batch's page in headless
// Chromium on both stores, checks that their progress and counts are the
// store's, and cancels a batch from its page.
func TestBatchesBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		f := batchWork(t, c)
		p := newPageSession(t, c, Options{RefreshInterval: -1})

		p.open("/batches", "#batches")
		for _, id := range []int64{f.mixed, f.done, f.open} {
			b, err := c.Batch(ctx, id)
			require.NoError(t, err)
			row := fmt.Sprintf(`#batches tr[data-batch="%d"]`, id)
			assert.Equal(t, fmt.Sprint(b.TotalJobs), p.text(row+" .total"), "batch %d total", id)
			assert.Equal(t, fmt.Sprint(b.PendingJobs), p.text(row+" .pending"), "batch %d pending", id)
			assert.Equal(t, fmt.Sprint(b.FailedJobs), p.text(row+" .failed"), "batch %d failed", id)
			assert.Equal(t, fmt.Sprintf("%d%%", b.Progress()), p.text(row+" .pct"), "batch %d progress", id)
			assert.Equal(t, fmt.Sprint(b.Progress()), p.attrs(row + " progress")[0]["value"])
		}
		assert.Equal(t, "80%", p.text(fmt.Sprintf(`#batches tr[data-batch="%d"] .pct`, f.mixed)), "four of five jobs ended")
		assert.Contains(t, p.text(fmt.Sprintf(`#batches tr[data-batch="%d"]`, f.done)), "completed")
		ids := p.attrs("#batches tbody tr")
		require.Len(t, ids, 3)
		assert.Equal(t, fmt.Sprint(f.open), ids[0]["data-batch"], "newest first")
		p.shot("batches")

		// The mixed batch: its catch callback ran, then and finally wait
		// for the last job; its failed job is linked.
		p.open(fmt.Sprintf("/batches/%d", f.mixed), "#batch-callbacks")
		assert.Contains(t, p.text(`#batch-callbacks tr[data-callback="catch"]`), "catch")
		assert.Contains(t, p.text(`#batch-callbacks tr[data-callback="then"]`), "not yet")
		assert.Equal(t, fmt.Sprintf("/jobs/%d", f.buried), p.attrs("#batch-failed a")[0]["href"])
		assert.Len(t, p.attrs("#batch-jobs tbody tr[data-job]"), 5)
		assert.Equal(t, "80%", p.text("#batch-progress"))
		p.shot("batch")

		// Cancel the open batch: its finally callback is enqueued.
		p.open(fmt.Sprintf("/batches/%d", f.open), "#batch-actions form")
		form := fmt.Sprintf(`#batch-actions form[action$="/batches/%d/cancel"]`, f.open)
		p.step("cancel the batch",
			chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(form+".armed")),
			chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS("#flash")))
		assert.Contains(t, p.text("#flash"), "cancelled")
		b, err := c.Batch(ctx, f.open)
		require.NoError(t, err)
		assert.True(t, b.Cancelled(), "the batch is cancelled in the store")
		assert.Contains(t, p.text("#batch-actions"), "cancelled")
		assert.Contains(t, p.text(`#batch-callbacks tr[data-callback="finally"]`), "cancel")
		assert.Empty(t, p.attrs("#batch-actions form"), "no cancel button on a cancelled batch")
	})
}

// TestBatchCancelNeedsCSRFAndWrites checks that cancelling a batch is a
// CSRF-checked POST that a read-only UI refuses.
func TestBatchCancelNeedsCSRFAndWrites(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	id, err := c.NewBatch(queuety.JobRequest{Handler: "x"}).Dispatch(ctx)
	require.NoError(t, err)

	ro := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, ReadOnly: true, Logger: quiet()}))
	res := ro.get(fmt.Sprintf("/batches/%d", id))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.False(t, strings.Contains(res.body, "/cancel"), "no cancel button when read-only")
	assert.Equal(t, http.StatusForbidden, ro.do(http.MethodPost, fmt.Sprintf("/batches/%d/cancel", id), url.Values{}, nil).StatusCode)

	b := newBrowser(t, Handler(c, open))
	noToken := b.do(http.MethodPost, fmt.Sprintf("/batches/%d/cancel", id), url.Values{}, nil)
	assert.Equal(t, http.StatusForbidden, noToken.StatusCode, "a POST without the CSRF token")
	got, err := c.Batch(ctx, id)
	require.NoError(t, err)
	assert.False(t, got.Cancelled())

	res = b.post(fmt.Sprintf("/batches/%d/cancel", id), nil)
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)
	got, err = c.Batch(ctx, id)
	require.NoError(t, err)
	assert.True(t, got.Cancelled())
	missing := b.get("/batches/999")
	assert.Equal(t, http.StatusNotFound, missing.StatusCode)
	assert.True(t, strings.Contains(missing.body, "there is no such batch"), "the 404 names a batch")
	assert.Equal(t, http.StatusBadRequest, b.get("/batches?before=x").StatusCode)
}
