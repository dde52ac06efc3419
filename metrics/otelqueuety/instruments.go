package otelqueuety

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuety/queuety-go/queuety"
)

// instruments are the metrics/prom metrics under OpenTelemetry names.
type instruments struct {
	dispatched, workflows, claimed     metric.Int64Counter
	completed, failed, retried, buried metric.Int64Counter
	errors, sweepRows, sweepErrs       metric.Int64Counter
	slotsMissed                        metric.Int64Counter
	handler, wait, claimDur, sweepDur  metric.Float64Histogram
	batch                              metric.Int64Histogram
	abandons                           metric.Int64Counter
	abandoned, unhealthy               metric.Int64UpDownCounter
}

// durationBounds (seconds) match metrics/prom's DurationBuckets.
var durationBounds = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

func (in *instruments) create(m metric.Meter) error {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	in.dispatched = counter("queuety.jobs.dispatched", "{job}", "Jobs written by Dispatch and DispatchMany.")
	in.workflows = counter("queuety.workflows.dispatched", "{workflow}", "Workflows started by DispatchWorkflow.")
	in.claimed = counter("queuety.jobs.claimed", "{job}", "Jobs claimed by this process's workers.")
	in.completed = counter("queuety.jobs.completed", "{attempt}", "Attempts recorded as completed.")
	in.failed = counter("queuety.jobs.failed", "{attempt}", "Attempts recorded as failed: retried plus buried.")
	in.retried = counter("queuety.jobs.retried", "{attempt}", "Failed attempts whose job is due again.")
	in.buried = counter("queuety.jobs.buried", "{attempt}", "Attempts that buried their job.")
	in.errors = counter("queuety.job.errors", "{attempt}", "Failed attempts by error category.")
	in.sweepRows = counter("queuety.sweep.rows", "{row}", "Rows changed (or schedules fired) by maintenance sweeps.")
	in.sweepErrs = counter("queuety.sweep.errors", "{sweep}", "Maintenance sweeps that failed.")
	in.slotsMissed = counter("queuety.schedule.slots_missed", "{slot}",
		"Due schedule slots that got no firing of their own: merged (catch-up once) or skipped (none) by a late tick.")
	in.handler = seconds("queuety.handler.duration", "Wall-clock time of handler calls.", durationBounds...)
	in.wait = seconds("queuety.dispatch_to_start.duration", "Time from a job falling due to its claim.", durationBounds...)
	in.claimDur = seconds("queuety.claim.duration", "Round trip of claims that took any job.",
		.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1)
	in.sweepDur = seconds("queuety.sweep.duration", "Run time of maintenance sweeps.", durationBounds...)
	in.abandons = counter("queuety.handler.abandons", "{handler}", "Handlers this process's workers abandoned because they ignored their cancelled context.")
	upDown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.abandoned = upDown("queuety.handlers.abandoned", "{handler}", "Handlers this process's workers abandoned that still run.")
	in.unhealthy = upDown("queuety.workers.unhealthy", "{worker}",
		"Workers of this process with more abandoned handlers still running than they tolerate; restart the process.")
	var err error
	in.batch, err = m.Int64Histogram("queuety.claim.batch_size", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs taken by claims that took any."), metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 20, 50, 100))
	errs = append(errs, err)
	return errors.Join(errs...)
}

// RegisterClient adds gauges observed from c's store at each collection,
// as metrics/prom's store collector reads them: queuety.queue.depth (jobs
// per queue.queue and queuety.status), queuety.queue.oldest_due_age (s)
// per queue, and queuety.workflows per status. A collection costs three
// reads however many queues there are. The returned registration
// unregisters them.
func (o *Observer) RegisterClient(c *queuety.Client) (metric.Registration, error) {
	depth, err1 := o.meter.Int64ObservableGauge("queuety.queue.depth", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs per queue and status, read from the store."))
	age, err2 := o.meter.Float64ObservableGauge("queuety.queue.oldest_due_age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest due pending job of each queue has waited (0 when none is due)."))
	wfs, err3 := o.meter.Int64ObservableGauge("queuety.workflows", metric.WithUnit("{workflow}"),
		metric.WithDescription("Workflows per status, read from the store."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return o.meter.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
		counts, err := c.Counts(ctx)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		var queues []string
		for _, qc := range counts {
			if !seen[qc.Queue] {
				queues = append(queues, qc.Queue)
				seen[qc.Queue] = true
			}
			obs.ObserveInt64(depth, qc.Count, metric.WithAttributes(AttrQueue.String(qc.Queue), AttrStatus.String(string(qc.Status))))
		}
		ages, err := c.OldestDueAges(ctx)
		if err != nil {
			return err
		}
		for _, q := range queues {
			obs.ObserveFloat64(age, ages[q].Seconds(), metric.WithAttributes(AttrQueue.String(q)))
		}
		byStatus, err := c.WorkflowCounts(ctx)
		if err != nil {
			return err
		}
		for st, n := range byStatus {
			obs.ObserveInt64(wfs, n, metric.WithAttributes(attribute.String(string(AttrStatus), string(st))))
		}
		return nil
	}, depth, age, wfs)
}
