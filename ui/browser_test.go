package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// EnvScreenshots names the directory every browser test saves its
// screenshots to (default: a temporary directory of the test). It is the
// only variable they read for it.
const EnvScreenshots = "QUEUETY_SCREENSHOTS"

// chromium returns the path of a Chromium or Chrome binary. Without one
// the test is skipped, except under CI=true, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("QUEUETY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary (CI=true requires the browser tests): install it with apt-get install chromium")
	}
	t.Skip("no chromium binary: skipping the browser tests")
	return ""
}

// screenshotDir returns where screenshots go, creating it.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// newChrome starts a headless browser for the test.
func newChrome(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1360, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser now, so that its start-up is not counted against
	// the first step's timeout.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// TestBrowser drives the UI in headless Chromium on a store a worker
// filled: the login form, live refresh, and actions whose effect is then
// checked in the database. It saves a screenshot of each page.
func TestBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		f := seed(t, c)
		spreadWork(t, c, 14) // throughput over the overview's window

		const token = "browser-test-token"
		srv := httptest.NewServer(Handler(c, Options{Token: token, RefreshInterval: 300 * time.Millisecond, Logger: quiet()}))
		t.Cleanup(srv.Close)
		browser := newChrome(t)
		dir := screenshotDir(t)
		prefix := filepath.Base(t.Name()) + "-"

		// step runs browser actions with a bound on how long they may wait.
		step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			sctx, cancel := context.WithTimeout(browser, 30*time.Second)
			defer cancel()
			require.NoError(t, chromedp.Do(sctx, actions...), what)
		}
		text := func(sel string) string {
			t.Helper()
			sctx, cancel := context.WithTimeout(browser, 30*time.Second)
			defer cancel()
			s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
			require.NoError(t, err, sel)
			return s
		}
		shot := func(name string) {
			t.Helper()
			sctx, cancel := context.WithTimeout(browser, 30*time.Second)
			defer cancel()
			png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, prefix+name+".png"), png, 0o644))
		}
		// confirm clicks an action button twice: once to arm it, once to
		// confirm, then waits for the result page's message.
		confirm := func(what, form string) {
			t.Helper()
			step(what,
				chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
				chromedp.WaitVisible(chromedp.CSS(form+".armed")),
				chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
				chromedp.WaitVisible(chromedp.CSS("#flash")))
		}

		// Log in with the token; the overview follows.
		step("log in",
			chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("#login")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Submit(chromedp.CSS("#token")),
			chromedp.WaitVisible(chromedp.CSS("#queues")),
			chromedp.WaitVisible(chromedp.CSS(`body[data-live="on"]`))) // the script runs under the CSP
		assert.Contains(t, text(`tr[data-queue="images"]`), "14m") // due since the first minute
		shot("overview")

		// Live refresh: a job on a new queue appears without a reload.
		_, err := c.Dispatch(ctx, "video.encode", nil, queuety.OnQueue("video"))
		require.NoError(t, err)
		step("live refresh", chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="video"]`)))
		// Pausing the refresh, and resuming it.
		step("pause the refresh",
			chromedp.Click(chromedp.CSS("#live-toggle")),
			chromedp.WaitVisible(chromedp.CSS(`body[data-live="off"]`)),
			chromedp.Click(chromedp.CSS("#live-toggle")),
			chromedp.WaitVisible(chromedp.CSS(`body[data-live="on"]`)))
		// The actions below run with the refresh paused (the choice is
		// kept across pages), as an operator would: a refresh landing
		// between finding a button and clicking it replaces the node.
		step("pause the refresh for the actions",
			chromedp.Click(chromedp.CSS("#live-toggle")),
			chromedp.WaitVisible(chromedp.CSS(`body[data-live="off"]`)))

		// Pause a queue.
		confirm("pause queue mail", `tr[data-queue="mail"] form`)
		assert.Contains(t, text("#flash"), "Queue mail paused")
		assert.Equal(t, []string{"mail"}, pausedQueues(t, c))
		step("the queue shows as paused", chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="mail"] .s-paused`)))

		// Retry the buried jobs in bulk.
		step("buried jobs", chromedp.Navigate(srv.URL+"/jobs?status=buried"), chromedp.WaitVisible(chromedp.CSS("#bulk")))
		assert.Contains(t, text("#jobs"), "disk full")
		shot("jobs-buried")
		confirm("retry all buried", "#bulk form")
		assert.Contains(t, text("#flash"), "Retried 1 buried jobs")
		assert.Equal(t, queuetytype.JobPending, jobStatus(t, c, f.buried))

		// A job's page.
		step("job page", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, f.buried)), chromedp.WaitVisible(chromedp.CSS("#job-logs")))
		assert.Contains(t, text("#job-logs"), "disk full")

		// The waiting workflow: its page, then a signal with a payload.
		step("workflow page",
			chromedp.Navigate(fmt.Sprintf("%s/workflows/%d", srv.URL, f.waiting)),
			chromedp.WaitVisible(chromedp.CSS("#steps")),
			chromedp.WaitVisible(chromedp.CSS("#signal-form")))
		assert.Contains(t, text("#wait"), "shipped")
		assert.Contains(t, text("#timeline"), "step_completed")
		shot("workflow")
		step("send a signal",
			chromedp.SetValue(chromedp.CSS("#signal-name"), "shipped"),
			chromedp.SendKeys(chromedp.CSS("#signal-payload"), `{"carrier": "ups"}`),
			chromedp.Click(chromedp.CSS("#send-signal")),
			chromedp.WaitVisible(chromedp.CSS("#flash")))
		assert.Contains(t, text("#flash"), "Signal shipped sent")
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.waiting))
		assert.Contains(t, text("#signals"), "ups")

		// A malformed payload ends on an error page, and changes nothing.
		step("malformed answer",
			chromedp.Navigate(fmt.Sprintf("%s/workflows/%d", srv.URL, f.approval)),
			chromedp.WaitVisible(chromedp.CSS("#answer-form")),
			chromedp.SendKeys(chromedp.CSS("#answer-payload"), `{"by": ops}`),
			chromedp.Click(chromedp.CSS("#approve")),
			chromedp.WaitVisible(chromedp.CSS("#error")))
		assert.Contains(t, text("#error"), "must be a JSON object")
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, f.approval))

		// The failed workflow: retry it.
		step("failed workflow",
			chromedp.Navigate(fmt.Sprintf("%s/workflows/%d", srv.URL, f.failed)),
			chromedp.WaitVisible(chromedp.CSS("#failures")))
		shot("workflow-failed")
		confirm("retry workflow", fmt.Sprintf(`#workflow-actions form[action$="/workflows/%d/retry"]`, f.failed))
		assert.Equal(t, queuetytype.WorkflowRunning, workflowStatus(t, c, f.failed))

		// Workflows list and schedules: disable the schedule.
		step("workflows", chromedp.Navigate(srv.URL+"/workflows"), chromedp.WaitVisible(chromedp.CSS("#workflows")))
		shot("workflows")
		step("schedules", chromedp.Navigate(srv.URL+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedules")))
		confirm("disable the schedule", fmt.Sprintf(`tr[data-schedule="%d"] form[action$="/disable"]`, f.schedule))
		sc, err := c.ScheduleByID(ctx, f.schedule)
		require.NoError(t, err)
		assert.False(t, sc.Enabled)
		shot("schedules")

		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		for _, want := range []string{"overview", "workflow", "jobs-buried", "schedules"} {
			assert.True(t, slices.Contains(names, prefix+want+".png"), "screenshot %s in %s", want, dir)
		}
	})
}
