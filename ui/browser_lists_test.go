package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// listBrowser drives one browser tab in a test, each step bounded in
// time, and saves screenshots.
type listBrowser struct {
	t      *testing.T
	ctx    context.Context
	url    string
	dir    string
	prefix string
}

func newListBrowser(t *testing.T, url string) *listBrowser {
	return &listBrowser{t: t, ctx: newChrome(t), url: url, dir: screenshotDir(t), prefix: filepath.Base(t.Name()) + "-"}
}

func (b *listBrowser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...), what)
}

// eval evaluates a JavaScript expression.
func evalIn[T any](b *listBrowser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// waitFor waits until a JavaScript expression is true.
func (b *listBrowser) waitFor(what, expr string) {
	b.t.Helper()
	b.step(what, chromedp.Poll[chromedp.Void](expr))
}

func (b *listBrowser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.dir, b.prefix+name+".png"), png, 0o644))
}

// rows are the ids of the jobs table's rows, in page order.
const jsJobRows = `Array.from(document.querySelectorAll("#jobs tbody tr[data-job]")).map(r => r.dataset.job).join(",")`

func idList(ids ...int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// TestBrowserLists drives the lists in headless Chromium: paging the
// newest-first jobs list from both ends, a payload search, a bulk retry
// checked in the database, and the live refresh that swaps the table in
// place without reloading the page.
func TestBrowserLists(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		ids := reversed(dispatchN(t, c, "paged", 2*jobsPerPage+7)) // newest first
		srv := httptest.NewServer(Handler(c, Options{AllowUnauthenticated: true, RefreshInterval: 300 * time.Millisecond, Logger: quiet()}))
		t.Cleanup(srv.Close)
		// The paging, search and bulk steps click links and buttons: a
		// server that does not refresh keeps them in place.
		still := httptest.NewServer(Handler(c, Options{AllowUnauthenticated: true, RefreshInterval: -1, Logger: quiet()}))
		t.Cleanup(still.Close)
		b := newListBrowser(t, srv.URL)

		// Paging: newest first; older, oldest, newer, newest.
		b.step("jobs", chromedp.Navigate(still.URL+"/jobs?queue=paged"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
		assert.Equal(t, idList(ids[:jobsPerPage]...), evalIn[string](b, jsJobRows), "the newest fifty")
		b.shot("jobs")
		b.step("older", chromedp.Click(chromedp.CSS("#next-page")), chromedp.WaitVisible(chromedp.CSS("#first-page")))
		assert.Equal(t, idList(ids[jobsPerPage:2*jobsPerPage]...), evalIn[string](b, jsJobRows), "the next fifty")
		// While the next page loads, #last-page is absent from the blank
		// document too: wait for the new page's list as well.
		b.step("oldest", chromedp.Click(chromedp.CSS("#last-page")), chromedp.WaitNotPresent(chromedp.CSS("#last-page")),
			chromedp.WaitVisible(chromedp.CSS("#jobs")))
		assert.Equal(t, idList(ids[len(ids)-jobsPerPage:]...), evalIn[string](b, jsJobRows), "the oldest fifty")
		b.step("newer", chromedp.Click(chromedp.CSS("#prev-page")), chromedp.WaitVisible(chromedp.CSS("#last-page")))
		assert.Equal(t, idList(ids[len(ids)-2*jobsPerPage:len(ids)-jobsPerPage]...), evalIn[string](b, jsJobRows))
		b.step("newest", chromedp.Click(chromedp.CSS("#first-page")), chromedp.WaitNotPresent(chromedp.CSS("#first-page")))
		assert.Equal(t, idList(ids[:jobsPerPage]...), evalIn[string](b, jsJobRows))

		// A search by payload substring, from the form.
		b.step("search",
			chromedp.Navigate(still.URL+"/jobs"),
			chromedp.WaitVisible(chromedp.CSS("#job-filters")),
			chromedp.SendKeys(chromedp.CSS(`#job-filters input[name="payload"]`), "needle-017"),
			chromedp.Submit(chromedp.CSS(`#job-filters input[name="payload"]`)),
			// The page the search loads: its field holds the text.
			chromedp.WaitVisible(chromedp.CSS(`#job-filters input[name="payload"][value="needle-017"]`)))
		b.waitFor("the search's rows", jsJobRows+` === "`+idList(ids[len(ids)-1-17])+`"`)
		loc, err := chromedp.Run(b.ctx, chromedp.Location())
		require.NoError(t, err)
		assert.Contains(t, loc, "payload=needle-017", "the search is a link")
		b.shot("jobs-search")

		// A bulk retry of three buried jobs.
		bulk := dispatchN(t, c, "bulk", 4)
		for _, id := range bulk[:3] {
			require.NoError(t, c.BuryJob(ctx, id, "disk full"))
		}
		b.step("buried jobs", chromedp.Navigate(still.URL+"/jobs?queue=bulk&status=buried"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
		b.waitFor("three buried rows", `document.querySelectorAll("#jobs tbody tr[data-job]").length === 3`)
		// Clicks are dispatched in the page: a refresh landing between
		// finding a node and clicking it would replace the node.
		evalIn[bool](b, `(document.getElementById("pick-all").click(), true)`)
		b.waitFor("three ticked", `document.getElementById("picked").textContent === "3"`)
		b.shot("jobs-bulk")
		b.step("retry them",
			chromedp.Click(chromedp.CSS(`#bulk-jobs button[value="retry"]`)),
			chromedp.WaitVisible(chromedp.CSS("#bulk-confirm")))
		assert.Contains(t, evalIn[string](b, `document.querySelector("main h1").textContent`), "Retry 3 jobs?")
		b.shot("jobs-bulk-confirm")
		b.step("confirm", chromedp.Click(chromedp.CSS("#bulk-go")), chromedp.WaitVisible(chromedp.CSS("#flash")))
		assert.Contains(t, evalIn[string](b, `document.getElementById("flash").textContent`), "Retried 3 jobs.")
		for _, id := range bulk[:3] {
			j, err := c.Job(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, queuetytype.JobPending, j.Status, "job %d", id)
			assert.Zero(t, j.Attempts, "job %d: fresh attempts", id)
			assert.Empty(t, j.ErrorMessage, "job %d", id)
			assert.True(t, j.FailedAt.IsZero(), "job %d", id)
			assert.False(t, j.AvailableAt.After(time.Now().Add(time.Second)), "job %d is due now", id)
		}
		assert.Equal(t, queuetytype.JobPending, jobStatus(t, c, bulk[3]), "the job not ticked is as it was")

		// The live refresh swaps the table in: a new job's row appears,
		// and a marker on window shows the page was not reloaded.
		b.step("live jobs", chromedp.Navigate(srv.URL+"/jobs?queue=live"), chromedp.WaitVisible(chromedp.CSS("#jobs")),
			chromedp.WaitVisible(chromedp.CSS(`body[data-live="on"]`)))
		evalIn[bool](b, `(window.queuetyMarker = true)`)
		id, err := c.Dispatch(ctx, "live.job", nil, queuety.OnQueue("live"))
		require.NoError(t, err)
		b.step("the new row", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-job="%d"]`, id))))
		assert.True(t, evalIn[bool](b, `window.queuetyMarker === true`), "the page was not reloaded")

		// A ticked row holds the refresh, so the rows stay where they
		// are under the selection; clearing it lets the refresh go on.
		evalIn[bool](b, fmt.Sprintf(`(document.querySelector('tr[data-job="%d"] input.pick').click(), true)`, id))
		b.step("tick a row", chromedp.WaitVisible(chromedp.CSS(`#live[data-held]`)))
		held, err := c.Dispatch(ctx, "live.job", nil, queuety.OnQueue("live"))
		require.NoError(t, err)
		since := evalIn[int](b, `parseInt(document.getElementById("live").dataset.held, 10)`)
		b.waitFor("two refreshes held after the dispatch", fmt.Sprintf(`parseInt(document.getElementById("live").dataset.held, 10) >= %d`, since+2))
		assert.False(t, evalIn[bool](b, fmt.Sprintf(`!!document.querySelector('tr[data-job="%d"]')`, held)), "no refresh while a row is ticked")
		assert.True(t, evalIn[bool](b, fmt.Sprintf(`document.querySelector('tr[data-job="%d"] input.pick').checked`, id)), "the tick stays")
		evalIn[bool](b, fmt.Sprintf(`(document.querySelector('tr[data-job="%d"] input.pick').click(), true)`, id))
		b.step("untick", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-job="%d"]`, held))))
	})
}

// TestBrowserPhoneWidth loads each main page at 390 pixels wide and
// checks that the page itself does not scroll sideways: the menu wraps
// and wide tables scroll inside their own box.
func TestBrowserPhoneWidth(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		srv := httptest.NewServer(Handler(c, Options{AllowUnauthenticated: true, RefreshInterval: -1, Logger: quiet()}))
		t.Cleanup(srv.Close)
		b := newListBrowser(t, srv.URL)
		b.step("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(1)))
		pages := map[string]string{
			"overview": "/", "jobs": "/jobs", "workflows": "/workflows", "schedules": "/schedules", "machines": "/machines",
			"workers": "/workers", "job": fmt.Sprintf("/jobs/%d", f.buried), "workflow": fmt.Sprintf("/workflows/%d", f.failed),
		}
		for name, path := range pages {
			b.step(name, chromedp.Navigate(srv.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			// A mobile browser widens its layout viewport (innerWidth) to
			// fit a page that is too wide, so both must stay at 390.
			width := evalIn[[]int](b, `[document.scrollingElement.scrollWidth, window.innerWidth]`)
			assert.LessOrEqual(t, width[0], 390, "%s: the page is %d pixels wide on a 390 pixel screen", path, width[0])
			assert.Equal(t, 390, width[1], "%s: the layout viewport is the screen's width", path)
			b.shot("phone-" + name)
		}
	})
}
