package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
)

// TestBrowserTour visits every page of a store with thousands of jobs,
// workflows (failed, waiting, a for-each), batches, schedules, a state
// machine and a webhook, at a desktop's width and at a phone's (390
// pixels), and checks that no page is wider than the window: wide
// tables and drawings scroll inside their own box, long ids and handler
// names wrap. It saves a screenshot of each page at each width.
func TestBrowserTour(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	f := seed(t, c)
	batches := batchWork(t, c)
	tl := timelineWorkflow(t, c)
	ticket := dispatchTicket(t, c)
	long := "reports.quarterly.generate_consolidated_financial_statements_for_every_subsidiary_v2"
	reqs := make([]queuety.JobRequest, 3000)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: long, Payload: queuety.State{"n": i}, Options: []queuety.JobOption{queuety.OnQueue("bulk-imports-eu-west-1")}}
	}
	_, err := c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	_, err = c.Schedule(long, nil).Every(15 * time.Minute).OnQueue("bulk-imports-eu-west-1").Save(ctx)
	require.NoError(t, err)
	_, err = builder.Workflow("orders.fulfil_international_shipment_with_customs_paperwork").Then("order.reserve").
		Dispatch(ctx, c, queuety.State{"order": 9})
	require.NoError(t, err)
	_, err = c.AddWebhook(ctx, "job.buried", "https://hooks.example.com/queuety/a-very-long-path/that/keeps/going/and/going?token=abcdefghijklmnopqrstuvwxyz0123456789")
	require.NoError(t, err)

	p := newPageSession(t, c, Options{RefreshInterval: -1})
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"jobs", "/jobs"},
		{"jobs-buried", "/jobs?status=buried"},
		{"job", fmt.Sprintf("/jobs/%d", f.buried)},
		{"workflows", "/workflows"},
		{"workflow-waiting", fmt.Sprintf("/workflows/%d", f.waiting)},
		{"workflow-failed", fmt.Sprintf("/workflows/%d", f.failed)},
		{"workflow-timeline", fmt.Sprintf("/workflows/%d", tl)},
		{"schedules", "/schedules"},
		{"machines", "/machines"},
		{"machine", fmt.Sprintf("/machines/%d", ticket)},
		{"workers", "/workers"},
		{"batches", "/batches"},
		{"batch", fmt.Sprintf("/batches/%d", batches.mixed)},
		{"webhooks", "/webhooks"},
		{"charts", "/charts"},
	}
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1360, 900}, {"phone", 390, 844}} {
		p.step("viewport "+size.name, chromedp.EmulateViewport(size.w, size.h))
		for _, pg := range pages {
			p.open(pg.path, "main h1")
			wctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
			over, err := chromedp.Run(wctx, chromedp.Evaluate[[]string](`(() => {
				const w = document.documentElement.clientWidth, out = [];
				if (document.documentElement.scrollWidth > w) out.push("page " + document.documentElement.scrollWidth + " > " + w);
				for (const el of document.querySelectorAll("main *")) {
					if (el.closest(".scroll, svg, pre, .chart-wrap, .tl-wrap")) continue;
					const r = el.getBoundingClientRect();
					if (r.width > 0 && r.right > w + 1) out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + el.className + " right " + Math.round(r.right));
				}
				return out.slice(0, 5);
			})()`))
			cancel()
			require.NoError(t, err)
			assert.Empty(t, over, "%s at %s: wider than the window", pg.path, size.name)
			p.shot(size.name + "-" + strings.ReplaceAll(pg.name, "/", "-"))
		}
	}
}
