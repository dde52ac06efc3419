// Package prom exports queuety's metrics to Prometheus.
//
// New registers the counters, the histograms and the gauges of this
// process's workers (abandoned handlers, unhealthy workers) with a
// Registerer and returns Metrics, an observe.Observer (and an
// observe.AbandonObserver) that updates them: install it with
// queuety.WithObserver. RegisterClient adds gauges read from the
// store at every scrape: jobs by queue and status, the age of each queue's
// oldest due job, and workflows by status. Handler serves the exposition.
//
//	reg := prometheus.NewRegistry()
//	m, err := prom.New(reg)
//	q, err := queuety.Open(ctx, dsn, queuety.WithObserver(m))
//	err = m.RegisterClient(q)
//	http.Handle("/metrics", prom.Handler(reg))
//
// Counters count what this process did, so sum them across workers; so
// do the worker gauges. The store gauges are the same from every process
// (they read the shared tables), so take one worker's, or max them.
//
// docs/metrics.md lists every metric.
package prom

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queuety/queuety-go/observe"
)

// Metrics holds the counters, histograms and worker gauges and updates
// them as an observe.Observer. It is safe for concurrent use.
type Metrics struct {
	observe.Nop
	reg prometheus.Registerer

	dispatched, workflows               *prometheus.CounterVec
	claimed, completed, failed, retried *prometheus.CounterVec
	buried, errors                      *prometheus.CounterVec
	handler, wait                       *prometheus.HistogramVec
	batch, claimDur                     *prometheus.HistogramVec
	sweepDur                            *prometheus.HistogramVec
	sweepRows, sweepErrs                *prometheus.CounterVec
	slotsMissed                         prometheus.Counter
	abandoned                           *prometheus.GaugeVec
	abandons                            *prometheus.CounterVec
	unhealthy                           prometheus.Gauge
}

// Bucket boundaries of the histograms.
var (
	// DurationBuckets (seconds) serve handler durations, dispatch-to-start
	// latencies and sweep durations: 1 ms to 10 minutes.
	DurationBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// ClaimDurationBuckets (seconds) serve claim round trips.
	ClaimDurationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	// BatchBuckets serve claim batch sizes (a claim takes at most 100).
	BatchBuckets = []float64{1, 2, 5, 10, 20, 50, 100}
)

// New creates the counters and histograms and registers them with reg.
// It fails when reg already holds metrics of the same names.
func New(reg prometheus.Registerer) (*Metrics, error) {
	jobLabels := []string{"queue", "handler"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "queuety", Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "queuety", Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &Metrics{
		reg:        reg,
		dispatched: counter("jobs_dispatched_total", "Jobs written by Dispatch and DispatchMany.", jobLabels...),
		workflows:  counter("workflows_dispatched_total", "Workflows started by DispatchWorkflow (an idempotency key that was used before starts none).", "workflow"),
		claimed:    counter("jobs_claimed_total", "Jobs claimed by this process's workers.", jobLabels...),
		completed:  counter("jobs_completed_total", "Attempts recorded as completed.", jobLabels...),
		failed:     counter("jobs_failed_total", "Attempts recorded as failed: retried plus buried.", jobLabels...),
		retried:    counter("jobs_retried_total", "Failed attempts whose job is due again.", jobLabels...),
		buried:     counter("jobs_buried_total", "Attempts that buried their job.", jobLabels...),
		errors:     counter("job_errors_total", "Failed attempts by error category.", "queue", "handler", "category"),
		handler:    histogram("handler_duration_seconds", "Wall-clock time of handler calls.", DurationBuckets, jobLabels...),
		wait:       histogram("dispatch_to_start_seconds", "Time from a job falling due to its claim (whole-second stored times).", DurationBuckets, "queue"),
		batch:      histogram("claim_batch_size", "Jobs taken by claims that took any.", BatchBuckets, "queues"),
		claimDur:   histogram("claim_duration_seconds", "Round trip of claims that took any job.", ClaimDurationBuckets, "queues"),
		sweepDur:   histogram("sweep_duration_seconds", "Run time of maintenance sweeps.", DurationBuckets, "sweep"),
		sweepRows:  counter("sweep_rows_total", "Rows changed (or schedules fired) by maintenance sweeps.", "sweep"),
		sweepErrs:  counter("sweep_errors_total", "Maintenance sweeps that failed.", "sweep"),
		slotsMissed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "queuety", Name: "schedule_slots_missed_total",
			Help: "Due schedule slots that got no firing of their own: merged (catch-up once) or skipped (none) by a late tick."}),
		abandoned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "queuety", Name: "handlers_abandoned",
			Help: "Handlers this process's workers abandoned (they ignored their cancelled context) that still run."}, jobLabels),
		abandons: counter("handlers_abandoned_total", "Handlers this process's workers abandoned because they ignored their cancelled context.", jobLabels...),
		unhealthy: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "queuety", Name: "workers_unhealthy",
			Help: "Workers of this process with more abandoned handlers still running than they tolerate; restart the process."}),
	}
	for _, c := range []prometheus.Collector{m.dispatched, m.workflows, m.claimed, m.completed, m.failed, m.retried, m.buried,
		m.errors, m.handler, m.wait, m.batch, m.claimDur, m.sweepDur, m.sweepRows, m.sweepErrs, m.slotsMissed, m.abandoned, m.abandons, m.unhealthy} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Handler serves g's metrics in the Prometheus exposition format (a
// *prometheus.Registry is a Gatherer). A collector that fails, such as
// the store gauges while the database is down, is reported in the
// response without hiding the other metrics.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// DispatchEnd counts the jobs and workflows written.
func (m *Metrics) DispatchEnd(_ context.Context, d observe.Dispatch, r observe.Dispatched) {
	if r.Err != nil || r.Existing {
		return
	}
	if d.Kind == observe.DispatchWorkflow {
		m.workflows.WithLabelValues(d.Name).Inc()
		return
	}
	for _, j := range r.Jobs {
		m.dispatched.WithLabelValues(j.Queue, j.Handler).Inc()
	}
}

// Claimed counts the claimed jobs and their dispatch-to-start latency,
// and records the size and round trip of claims that took any.
func (m *Metrics) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 {
		return ctx
	}
	queues := strings.Join(c.Queues, ",")
	m.batch.WithLabelValues(queues).Observe(float64(len(c.Jobs)))
	m.claimDur.WithLabelValues(queues).Observe(c.Duration.Seconds())
	for _, j := range c.Jobs {
		m.claimed.WithLabelValues(j.Queue, j.Handler).Inc()
		m.wait.WithLabelValues(j.Queue).Observe(j.Wait.Seconds())
	}
	return ctx
}

// HandlerEnd records the handler's duration.
func (m *Metrics) HandlerEnd(_ context.Context, j observe.Job, h observe.Handled) {
	m.handler.WithLabelValues(j.Queue, j.Handler).Observe(h.Duration.Seconds())
}

// JobEnd counts the attempt's outcome.
func (m *Metrics) JobEnd(_ context.Context, j observe.Job, e observe.Ended) {
	switch e.Outcome {
	case observe.OutcomeCompleted:
		m.completed.WithLabelValues(j.Queue, j.Handler).Inc()
		return
	case observe.OutcomeRetried:
		m.retried.WithLabelValues(j.Queue, j.Handler).Inc()
	case observe.OutcomeBuried:
		m.buried.WithLabelValues(j.Queue, j.Handler).Inc()
	default:
		return
	}
	m.failed.WithLabelValues(j.Queue, j.Handler).Inc()
	if e.Category != "" {
		m.errors.WithLabelValues(j.Queue, j.Handler, string(e.Category)).Inc()
	}
}

// Swept records a maintenance sweep, and the schedule slots a tick
// missed.
func (m *Metrics) Swept(_ context.Context, s observe.Sweep) {
	m.sweepDur.WithLabelValues(s.Name).Observe(s.Duration.Seconds())
	m.sweepRows.WithLabelValues(s.Name).Add(float64(s.Rows))
	if s.Missed > 0 {
		m.slotsMissed.Add(float64(s.Missed))
	}
	if s.Err != nil {
		m.sweepErrs.WithLabelValues(s.Name).Inc()
	}
}

// HandlerAbandoned keeps the gauge of abandoned handlers still running,
// counts the abandonments, and keeps the gauge of unhealthy workers.
func (m *Metrics) HandlerAbandoned(_ context.Context, j observe.Job, a observe.Abandon) {
	if a.Returned {
		m.abandoned.WithLabelValues(j.Queue, j.Handler).Dec()
	} else {
		m.abandoned.WithLabelValues(j.Queue, j.Handler).Inc()
		m.abandons.WithLabelValues(j.Queue, j.Handler).Inc()
	}
	switch now, was := a.Unhealthy(), a.WasUnhealthy(); {
	case now && !was:
		m.unhealthy.Inc()
	case was && !now:
		m.unhealthy.Dec()
	}
}
