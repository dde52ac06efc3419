package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// ScrapeTimeout bounds the store reads of one scrape.
const ScrapeTimeout = 5 * time.Second

// jobStatuses and workflowStatuses are reported even when no row has
// them, so a series drops to 0 instead of disappearing.
var (
	jobStatuses = []queuetytype.JobStatus{queuetytype.JobPending, queuetytype.JobProcessing, queuetytype.JobCompleted,
		queuetytype.JobFailed, queuetytype.JobBuried}
	workflowStatuses = []queuetytype.WorkflowStatus{queuetytype.WorkflowRunning, queuetytype.WorkflowPaused,
		queuetytype.WorkflowWaitingForSignal, queuetytype.WorkflowWaitingForWorkflows, queuetytype.WorkflowCompleted,
		queuetytype.WorkflowFailed, queuetytype.WorkflowCancelled}
)

// RegisterClient registers, with the Registerer given to New, the gauges
// read from c's store at each scrape (see NewStoreCollector).
func (m *Metrics) RegisterClient(c *queuety.Client) error {
	return m.reg.Register(NewStoreCollector(c))
}

// NewStoreCollector returns a collector that reads, at each scrape:
//
//   - queuety_queue_depth{queue,status}: jobs per queue and status (every
//     status of every queue that has jobs, 0 included);
//   - queuety_queue_oldest_due_age_seconds{queue}: how long the oldest due
//     pending job of each queue has waited, 0 when none is due;
//   - queuety_workflows{status}: workflows per status;
//   - queuety_workers{status}: workers in the worker registry, live or gone
//     (see queuety.Client.Workers).
//
// A scrape costs four reads however many queues there are: a
// grouped count of the jobs table, a grouped read of the oldest due job
// of every queue (a few index entries per queue, no payload), a
// grouped count of the workflows table and a read of the worker registry
// (a row per worker), all within ScrapeTimeout. The gauges describe the shared tables, so every
// process reports the same values.
func NewStoreCollector(c *queuety.Client) prometheus.Collector {
	return &storeCollector{c: c}
}

type storeCollector struct{ c *queuety.Client }

var (
	depthDesc = prometheus.NewDesc("queuety_queue_depth", "Jobs per queue and status, read from the store at scrape time.",
		[]string{"queue", "status"}, nil)
	ageDesc = prometheus.NewDesc("queuety_queue_oldest_due_age_seconds",
		"How long the oldest due pending job of each queue has waited (0 when none is due), at scrape time.", []string{"queue"}, nil)
	workflowsDesc = prometheus.NewDesc("queuety_workflows", "Workflows per status, read from the store at scrape time.",
		[]string{"status"}, nil)
	workersDesc = prometheus.NewDesc("queuety_workers", "Workers in the worker registry, live or gone (missed 3 heartbeats), at scrape time.",
		[]string{"status"}, nil)
)

// Describe sends the gauges' descriptions.
func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- ageDesc
	ch <- workflowsDesc
	ch <- workersDesc
}

// Collect reads the store. A failed read is reported as an invalid
// metric, which fails that part of the scrape.
func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	counts, err := s.c.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(depthDesc, err)
	} else {
		byQueue := map[string]map[queuetytype.JobStatus]int64{}
		var queues []string
		for _, qc := range counts {
			if byQueue[qc.Queue] == nil {
				byQueue[qc.Queue] = map[queuetytype.JobStatus]int64{}
				queues = append(queues, qc.Queue)
			}
			byQueue[qc.Queue][qc.Status] += qc.Count
		}
		for _, q := range queues {
			for _, st := range jobStatuses {
				ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(byQueue[q][st]), q, string(st))
			}
		}
		ages, err := s.c.OldestDueAges(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(ageDesc, err)
		} else {
			for _, q := range queues {
				ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, ages[q].Seconds(), q)
			}
		}
	}
	wfs, err := s.c.WorkflowCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(workflowsDesc, err)
	} else {
		for _, st := range workflowStatuses {
			ch <- prometheus.MustNewConstMetric(workflowsDesc, prometheus.GaugeValue, float64(wfs[st]), string(st))
		}
	}
	workers, err := s.c.Workers(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(workersDesc, err)
		return
	}
	var live, gone int
	for _, w := range workers {
		if w.Gone {
			gone++
		} else {
			live++
		}
	}
	ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(live), "live")
	ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(gone), "gone")
}
