package prom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// scrape fetches url and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "scrape status")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "parse the exposition")
	return fams
}

// keyOrder is the order of label values in series keys.
var keyOrder = []string{"queue", "queues", "handler", "category", "status", "sweep", "workflow"}

// series returns the value of each series of a family (counter, gauge, or
// a histogram's sample count), keyed by its label values joined with "/"
// in keyOrder ("default/ok" for queue="default", handler="ok").
func series(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		key := ""
		for _, name := range keyOrder {
			for _, l := range m.GetLabel() {
				if l.GetName() != name {
					continue
				}
				if key != "" {
					key += "/"
				}
				key += l.GetValue()
			}
		}
		switch {
		case m.Counter != nil:
			out[key] = m.GetCounter().GetValue()
		case m.Gauge != nil:
			out[key] = m.GetGauge().GetValue()
		case m.Histogram != nil:
			out[key] = float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// TestMetricsMatchTheTables runs a real worker on MariaDB over plain jobs
// that complete, retry, and are buried, and two small workflows; it
// scrapes /metrics over HTTP while they run and after, and checks every
// counter against the rows in the jobs, logs and workflows tables, and
// the gauges against the rows.
func TestMetricsMatchTheTables(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	require.NoError(t, err)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithObserver(m))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, m.RegisterClient(c))
	srv := httptest.NewServer(prom.Handler(reg))
	defer srv.Close()
	url := srv.URL + "/metrics"

	// A job on a queue no worker polls: the oldest due age gauge grows.
	idleID, err := c.Dispatch(ctx, "idle", nil, queuety.OnQueue("idle"))
	require.NoError(t, err)
	// And one not yet due: depth counts it, age does not.
	_, err = c.Dispatch(ctx, "later", nil, queuety.OnQueue("idle"), queuety.Delay(time.Hour))
	require.NoError(t, err)

	const oks, flaky, bad, fatal = 20, 5, 3, 2
	var reqs []queuety.JobRequest
	add := func(n int, handler string, opts ...queuety.JobOption) {
		for i := range n {
			reqs = append(reqs, queuety.JobRequest{Handler: handler, Payload: queuety.State{"i": i}, Options: opts})
		}
	}
	retryNow := queuety.Retry(2, queuety.BackoffSeconds(0))
	add(oks, "ok")
	add(flaky, "flaky", retryNow)                // fails once, then completes
	add(bad, "bad", retryNow)                    // fails twice: retried, then buried
	add(fatal, "fatal", queuety.OnQueue("mail")) // non-retryable: buried at once
	_, err = c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, "ok", queuety.State{"unique": true}, queuety.Unique())
	require.NoError(t, err)
	_, err = c.Dispatch(ctx, "ok", queuety.State{"unique": true}, queuety.Unique()) // finds the first: writes nothing
	require.NoError(t, err)
	wf := builder.Workflow("report").Then("wf_a").Then("wf_b")
	for i := range 2 {
		_, err := wf.Dispatch(ctx, c, queuety.State{"n": i})
		require.NoError(t, err)
	}

	// The first scrape, before any worker ran: dispatches are counted.
	fams := scrape(t, url)
	assert.Equal(t, float64(oks+1+flaky+bad+fatal+2), total(series(fams, "queuety_jobs_dispatched_total")), "dispatched before the run")
	assert.Equal(t, map[string]float64{"report": 2}, series(fams, "queuety_workflows_dispatched_total"), "workflows dispatched")

	var mu sync.Mutex
	flakyRuns := map[int64]int{}
	w := worker.New(c, worker.Queues("default", "mail"), worker.Concurrency(8), worker.PollInterval(10*time.Millisecond),
		worker.WithLogger(quiet()))
	w.HandleJob("ok", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("flaky", func(ctx context.Context, p queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		flakyRuns[info.JobID]++
		if flakyRuns[info.JobID] == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	w.HandleJob("bad", func(context.Context, queuety.Payload) error { return errors.New("always fails") })
	w.HandleJob("fatal", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("fatal")) })
	w.HandleStep("wf_a", func(_ context.Context, s queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleStep("wf_b", func(_ context.Context, s queuety.State) (queuety.State, error) { return queuety.State{"b": 2}, nil })
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

	// Scrapes during the run parse and never go backwards.
	settled := func() bool {
		counts, err := c.Counts(ctx)
		require.NoError(t, err)
		open := 0
		for _, qc := range counts {
			if qc.Queue != "idle" && (qc.Status == driver.JobPending || qc.Status == driver.JobProcessing) {
				open += int(qc.Count)
			}
		}
		wfs, err := c.WorkflowCounts(ctx)
		require.NoError(t, err)
		return open == 0 && wfs[queuetytype.WorkflowCompleted] == 2
	}
	last := 0.0
	require.Eventually(t, func() bool {
		n := total(series(scrape(t, url), "queuety_jobs_claimed_total"))
		assert.GreaterOrEqual(t, n, last, "claimed went backwards")
		last = n
		return settled()
	}, time.Minute, 20*time.Millisecond, "all jobs and workflows settle")
	// Results are counted after they are recorded, which is when the rows
	// settle; the sweeps run at the worker's start.
	require.Eventually(t, func() bool {
		fams = scrape(t, url)
		return series(fams, "queuety_sweep_duration_seconds")["stale-recovery"] >= 1 &&
			total(series(fams, "queuety_handler_duration_seconds")) == total(series(fams, "queuety_jobs_claimed_total"))
	}, 10*time.Second, 10*time.Millisecond, "sweeps and handler calls reported")
	stop()
	require.NoError(t, <-done)

	// Counters against the logs table, per queue and handler.
	fams = scrape(t, url)
	logs, err := c.Logs(ctx, driver.LogFilter{Limit: 10000})
	require.NoError(t, err)
	byEvent := map[driver.LogEvent]map[string]float64{}
	for _, l := range logs {
		if byEvent[l.Event] == nil {
			byEvent[l.Event] = map[string]float64{}
		}
		byEvent[l.Event][l.Queue+"/"+l.Handler]++
	}
	assert.Equal(t, byEvent[driver.LogStarted], series(fams, "queuety_jobs_claimed_total"), "claimed = started log rows")
	assert.Equal(t, byEvent[driver.LogCompleted], series(fams, "queuety_jobs_completed_total"), "completed = completed log rows")
	assert.Equal(t, byEvent[driver.LogRetried], series(fams, "queuety_jobs_retried_total"), "retried = retried log rows")
	assert.Equal(t, byEvent[driver.LogBuried], series(fams, "queuety_jobs_buried_total"), "buried = buried log rows")
	failedRows := map[string]float64{}
	for _, ev := range []driver.LogEvent{driver.LogFailed, driver.LogBuried} {
		for k, v := range byEvent[ev] {
			failedRows[k] += v
		}
	}
	assert.Equal(t, failedRows, series(fams, "queuety_jobs_failed_total"), "failed = failed + buried log rows")
	assert.Equal(t, byEvent[driver.LogStarted], series(fams, "queuety_handler_duration_seconds"), "handler calls = started log rows")
	// And against what the test made happen.
	assert.Equal(t, map[string]float64{
		"default/ok": oks + 1, "default/flaky": flaky, "default/wf_a": 2, "default/wf_b": 2,
	}, series(fams, "queuety_jobs_completed_total"), "completed by handler")
	assert.Equal(t, map[string]float64{"default/flaky": flaky, "default/bad": bad}, series(fams, "queuety_jobs_retried_total"))
	assert.Equal(t, map[string]float64{"default/bad": bad, "mail/fatal": fatal}, series(fams, "queuety_jobs_buried_total"))
	assert.Equal(t, map[string]float64{
		"default/flaky/error": flaky, "default/bad/error": 2 * bad, "mail/fatal/non_retryable": fatal,
	}, series(fams, "queuety_job_errors_total"), "errors by category")

	// Dispatch counters against the jobs and workflows tables.
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Limit: 10000})
	require.NoError(t, err)
	plain := map[string]float64{}
	for _, j := range jobs {
		if j.WorkflowID == 0 {
			plain[j.Queue+"/"+j.Handler]++
		}
	}
	assert.Equal(t, plain, series(fams, "queuety_jobs_dispatched_total"), "dispatched = plain job rows")
	wfs, err := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	require.NoError(t, err)
	assert.Len(t, wfs, int(total(series(fams, "queuety_workflows_dispatched_total"))), "workflows dispatched = workflow rows")
	assert.Equal(t, total(series(fams, "queuety_jobs_claimed_total")), total(series(fams, "queuety_dispatch_to_start_seconds")),
		"one dispatch-to-start sample per claimed job")
	assert.GreaterOrEqual(t, total(series(fams, "queuety_claim_batch_size")), 1.0, "claim batches")

	// Gauges against the rows.
	before := time.Now()
	fams = scrape(t, url)
	after := time.Now()
	counts, err := c.Counts(ctx)
	require.NoError(t, err)
	depth := series(fams, "queuety_queue_depth")
	for _, qc := range counts {
		assert.Equalf(t, float64(qc.Count), depth[qc.Queue+"/"+string(qc.Status)], "depth of %s/%s", qc.Queue, qc.Status)
	}
	assert.Equal(t, 0.0, depth["mail/pending"], "a status without rows reads 0")
	assert.Len(t, depth, 3*5, "every status of the three queues")
	idle, err := c.Job(ctx, idleID)
	require.NoError(t, err)
	age := series(fams, "queuety_queue_oldest_due_age_seconds")
	assert.GreaterOrEqual(t, age["idle"], before.Sub(idle.AvailableAt).Seconds()-0.001, "oldest due age of idle")
	assert.LessOrEqual(t, age["idle"], after.Sub(idle.AvailableAt).Seconds()+0.001, "oldest due age of idle")
	assert.Equal(t, 0.0, age["default"], "nothing due on default")
	wfCounts, err := c.WorkflowCounts(ctx)
	require.NoError(t, err)
	gauge := series(fams, "queuety_workflows")
	for _, st := range []queuetytype.WorkflowStatus{queuetytype.WorkflowCompleted, queuetytype.WorkflowRunning, queuetytype.WorkflowFailed} {
		assert.Equalf(t, float64(wfCounts[st]), gauge[string(st)], "workflows %s", st)
	}
	assert.Equal(t, 2.0, gauge["completed"])
	t.Logf("%d log rows, %d jobs", len(logs), len(jobs))
}

// TestScrapeCostDoesNotGrowWithQueues fills 40 queues with a due job each
// and checks that a scrape of the store gauges runs the same few
// statements as with one queue, with every queue's oldest due age right.
func TestScrapeCostDoesNotGrowWithQueues(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	// No cross-process wake-up: its background sends after the dispatches
	// would run on the pool's connection and be counted with the scrape.
	dsn += "&wake=false" // migrated.DSN carries parameters already
	clock := queuety.NewFakeClock(time.Now().Truncate(time.Second))
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithClock(clock))
	require.NoError(t, err)
	defer c.Close()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(prom.NewStoreCollector(c)))
	db := clientseam.StoreOf(c).(*mysql.Store).DB

	scrapeCost := func() (int64, map[string]float64) {
		var fams []*dto.MetricFamily
		n := testdb.CountStatements(t, db, func() {
			var err error
			fams, err = reg.Gather()
			require.NoError(t, err)
		})
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		return n, series(byName, "queuety_queue_oldest_due_age_seconds")
	}
	_, err = c.Dispatch(ctx, "h", nil, queuety.OnQueue("q00"))
	require.NoError(t, err)
	clock.Advance(time.Minute)
	one, ages := scrapeCost()
	assert.Equal(t, map[string]float64{"q00": 60}, ages)

	for i := 1; i < 40; i++ {
		_, err := c.Dispatch(ctx, "h", nil, queuety.OnQueue(fmt.Sprintf("q%02d", i)))
		require.NoError(t, err)
	}
	clock.Advance(time.Minute)
	forty, ages := scrapeCost()
	t.Logf("statements per scrape: %d with one queue, %d with forty", one, forty)
	assert.Equal(t, one, forty, "statements per scrape with 40 queues")
	require.Len(t, ages, 40)
	assert.Equal(t, 120.0, ages["q00"])
	assert.Equal(t, 60.0, ages["q39"])
}

// gather reads reg's families as a scrape would.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	list, err := reg.Gather()
	require.NoError(t, err)
	fams := map[string]*dto.MetricFamily{}
	for _, f := range list {
		fams[f.GetName()] = f
	}
	return fams
}

// TestAbandonedHandlerGauges: the gauge of abandoned handlers goes up
// when a worker abandons one and down when it returns, the counter counts
// abandonments, and the unhealthy-workers gauge follows the worker's
// health across its limit.
func TestAbandonedHandlerGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	require.NoError(t, err)
	ctx := context.Background()
	job := observe.Job{ID: 1, Queue: "default", Handler: "stuck"}
	event := func(returned bool, abandoned int) {
		m.HandlerAbandoned(ctx, job, observe.Abandon{Returned: returned, Abandoned: abandoned, MaxAbandoned: 1})
	}
	check := func(abandoned, total, unhealthy float64) {
		t.Helper()
		fams := gather(t, reg)
		assert.Equal(t, abandoned, series(fams, "queuety_handlers_abandoned")["default/stuck"], "queuety_handlers_abandoned")
		assert.Equal(t, total, series(fams, "queuety_handlers_abandoned_total")["default/stuck"], "queuety_handlers_abandoned_total")
		assert.Equal(t, unhealthy, series(fams, "queuety_workers_unhealthy")[""], "queuety_workers_unhealthy")
	}
	event(false, 1)
	check(1, 1, 0)
	event(false, 2) // past the limit of 1
	check(2, 2, 1)
	event(true, 1)
	check(1, 2, 0)
	event(true, 0)
	check(0, 2, 0)
}
