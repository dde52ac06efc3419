package ui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// chartFixture is twenty minutes of work a worker did on queue "charts",
// on a fake clock that ends at now.
type chartFixture struct {
	now   time.Time // the UI's clock: 5s past the minute after the last
	start time.Time // the first minute
}

// chartMinutes is how many minutes chartWork fills.
const chartMinutes = 20

// chartWork dispatches and runs, in minute i of twenty, i%4+1 jobs that
// succeed, a failing job when i%3 == 0, two jobs taking 300ms in minute 7,
// and in minute 10 a job that starts 40s after it was due.
func chartWork(t *testing.T, c *queuety.Client) chartFixture {
	t.Helper()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Minute).Add(-chartMinutes * time.Minute)
	clock := queuety.NewFakeClock(start.Add(5 * time.Second))
	past := pastClient(c, clock)
	dispatch := func(handler string, n int, opts ...queuety.JobOption) {
		for range n {
			_, err := past.Dispatch(ctx, handler, nil, append([]queuety.JobOption{queuety.OnQueue("charts")}, opts...)...)
			require.NoError(t, err)
		}
	}
	for i := range chartMinutes {
		clock.Set(start.Add(time.Duration(i)*time.Minute + 5*time.Second))
		dispatch("chart.ok", i%4+1)
		if i%3 == 0 {
			dispatch("chart.bad", 1, queuety.MaxAttempts(1))
		}
		if i == 7 {
			dispatch("chart.slow", 2)
		}
		chartWorker(t, past)
		if i == 10 {
			dispatch("chart.ok", 1)
			clock.Advance(40 * time.Second)
			chartWorker(t, past)
		}
	}
	return chartFixture{now: start.Add(chartMinutes*time.Minute + 5*time.Second), start: start}
}

// expectedBuckets counts the log rows of event (and handler, when set) in
// the one-minute buckets of the hour before until, read with Logs: the
// numbers a 1-hour chart of queue "charts" must show.
func expectedBuckets(t *testing.T, c *queuety.Client, until time.Time, handler string, events ...queuetytype.LogEvent) map[int]string {
	t.Helper()
	since := until.Add(-time.Hour)
	counts := map[int]int{}
	for _, ev := range events {
		logs, err := c.Logs(context.Background(), queuetytype.LogFilter{Event: ev, Handler: handler, Since: since, Limit: 10000})
		require.NoError(t, err)
		for _, l := range logs {
			if l.Queue == "charts" && l.CreatedAt.Before(until) {
				counts[int(l.CreatedAt.Sub(since)/time.Minute)]++
			}
		}
	}
	out := map[int]string{}
	for b, n := range counts {
		out[b] = strconv.Itoa(n)
	}
	return out
}

// TestChartsBrowser draws the charts page in headless Chromium on both
// stores and checks that each bar and point holds the number the log
// and job rows give for its bucket.
func TestChartsBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := chartWork(t, c)
		p := newPageSession(t, c, Options{Clock: queuety.NewFakeClock(f.now), RefreshInterval: -1})
		until := f.now.Truncate(time.Minute).Add(time.Minute)
		bucket := func(minute int) int {
			return int(f.start.Add(time.Duration(minute)*time.Minute).Sub(until.Add(-time.Hour)) / time.Minute)
		}

		p.open("/charts?window=1h&queue=charts", "#chart-throughput svg")
		completed := expectedBuckets(t, c, until, "", queuetytype.LogCompleted)
		require.Len(t, completed, chartMinutes, "the fixture completed jobs in every minute")
		assert.Equal(t, completed, bucketValues(t, p.attrs("#chart-throughput rect")), "throughput: one bar per minute with work, its count")
		failed := expectedBuckets(t, c, until, "", queuetytype.LogFailed, queuetytype.LogBuried)
		require.Len(t, failed, 7)
		assert.Equal(t, failed, bucketValues(t, p.attrs("#chart-failures rect")), "failures per minute")
		// Two of minute 7's six jobs ran at least 300ms: its p95 is the
		// upper bound of their class, at most the slowest.
		p95, err := strconv.ParseFloat(bucketValues(t, p.attrs("#chart-duration circle.line-p95"))[bucket(7)], 64)
		require.NoError(t, err)
		slowest, err := strconv.ParseFloat(p.text(fmt.Sprintf(`#chart-table tr[data-bucket="%d"] td:nth-child(6)`, bucket(7))), 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, p95, 300.0, "p95 duration of minute 7")
		assert.LessOrEqual(t, p95, slowest, "p95 duration of minute 7")
		assert.GreaterOrEqual(t, slowest, 300.0, "max duration of minute 7")
		assert.Equal(t, "40", bucketValues(t, p.attrs("#chart-wait circle.line-p95"))[bucket(10)], "p95 wait of minute 10")
		assert.Contains(t, p.text("#chart-summary"), "queue charts")
		assert.Equal(t, "Throughput", p.text("#chart-throughput svg title"), "the chart has an accessible title")
		p.shot("charts")

		// The overview's compact charts: every queue over the last hour.
		p.open("/", "#overview-charts")
		assert.Equal(t, completed, bucketValues(t, p.attrs("#overview-chart-throughput rect")), "the overview's throughput")
		assert.Equal(t, failed, bucketValues(t, p.attrs("#overview-chart-failures rect")), "the overview's failures")
		p.shot("overview-charts")

		// One handler: its failures only, and no throughput.
		p.open("/charts?window=1h&queue=charts&handler=chart.bad", "#chart-failures svg")
		assert.Equal(t, expectedBuckets(t, c, until, "chart.bad", queuetytype.LogFailed, queuetytype.LogBuried),
			bucketValues(t, p.attrs("#chart-failures rect")))
		assert.Empty(t, p.attrs("#chart-throughput rect"))
		assert.Contains(t, p.text("#chart-throughput svg"), "no data in this window")

		// The 15-minute window has fifteen one-minute buckets; 7 days have
		// two-hour buckets, one of which holds every completion.
		p.open("/charts?window=15m&queue=charts", "#chart-throughput svg")
		assert.Len(t, p.attrs("#chart-table tbody tr"), 15)
		p.open("/charts?window=7d&queue=charts", "#chart-throughput svg")
		var total int
		for _, v := range completed {
			n, _ := strconv.Atoi(v)
			total += n
		}
		var drawn int
		for _, v := range bucketValues(t, p.attrs("#chart-throughput rect")) {
			n, _ := strconv.Atoi(v)
			drawn += n
		}
		assert.Equal(t, total, drawn, "the week's bars hold every completion")
		p.shot("charts-7d")
	})
}

// TestChartsPageRefusesBadInput checks the selectors' validation.
func TestChartsPageRefusesBadInput(t *testing.T) {
	c := openStore(t, "sqlite")
	b := newBrowser(t, Handler(c, open))
	res := b.get("/charts?window=2y")
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, res.body, "Unknown window")
	res = b.get("/charts?queue=" + strings.Repeat("q", 300) + "&handler=%3Cscript%3E")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.NotContains(t, res.body, "<script>")
	for _, w := range chartWindowOrder {
		res = b.get(fmt.Sprintf("/charts?window=%s", w))
		assert.Equal(t, http.StatusOK, res.StatusCode, w)
	}
}
