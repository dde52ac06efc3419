// Package otelqueuety traces and measures queuety with OpenTelemetry.
//
// New returns an observe.Observer; install it with queuety.WithObserver.
// It records spans on a TracerProvider and the instruments of package
// metrics/prom (under OpenTelemetry names) on a MeterProvider, the global
// ones unless Config names others. RegisterClient adds the gauges read
// from the store at each collection.
//
// Spans, with the attributes queuety.job_id, queuety.queue,
// queuety.handler, queuety.attempt, and for workflow steps
// queuety.workflow_id and queuety.step_index:
//
//	queuety.dispatch   (producer) around Dispatch, DispatchMany and DispatchWorkflow
//	queuety.claim      one claim round trip that took jobs (or failed)
//	└─ queuety.process (consumer) one attempt, from its start until its outcome is recorded
//	   ├─ queuety.handler   the handler call: its context is the handler's, so the
//	   │                    handler's own spans nest under it; errors are recorded here
//	   └─ queuety.complete  recording the outcome (successes are written in batches)
//
// The process span carries queuety.outcome (completed, retried, buried,
// stale, handed_back, unrecorded) and an error status when the attempt
// failed. Trace context is not carried through the database: a dispatch
// and the attempts that run its job are separate traces.
package otelqueuety

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuety/queuety-go/observe"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/queuety/queuety-go/metrics/otelqueuety"

// Attribute keys.
const (
	AttrJobID      = attribute.Key("queuety.job_id")
	AttrQueue      = attribute.Key("queuety.queue")
	AttrQueues     = attribute.Key("queuety.queues")
	AttrHandler    = attribute.Key("queuety.handler")
	AttrAttempt    = attribute.Key("queuety.attempt")
	AttrWorkflowID = attribute.Key("queuety.workflow_id")
	AttrStepIndex  = attribute.Key("queuety.step_index")
	AttrWorkflow   = attribute.Key("queuety.workflow") // a workflow's name
	AttrKind       = attribute.Key("queuety.dispatch.kind")
	AttrCount      = attribute.Key("queuety.count")
	AttrOutcome    = attribute.Key("queuety.outcome")
	AttrCategory   = attribute.Key("queuety.error.category")
	AttrSweep      = attribute.Key("queuety.sweep")
	AttrStatus     = attribute.Key("queuety.status")
)

// Config selects the providers. Zero fields take the global ones
// (otel.GetTracerProvider, otel.GetMeterProvider).
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Observer traces and measures queuety. It is safe for concurrent use.
type Observer struct {
	observe.Nop
	tracer trace.Tracer
	meter  metric.Meter
	inst   instruments
	// attrs caches the attribute sets of (queue, handler) pairs, so a
	// measurement does not build one each time.
	attrs sync.Map // jobKey -> metric.MeasurementOption
}

type jobKey struct{ queue, handler string }

// New creates the tracer, the meter and the instruments.
func New(cfg Config) (*Observer, error) {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	o := &Observer{tracer: tp.Tracer(ScopeName), meter: mp.Meter(ScopeName)}
	if err := o.inst.create(o.meter); err != nil {
		return nil, err
	}
	return o, nil
}

// jobAttrs is the measurement option of a (queue, handler) pair.
func (o *Observer) jobAttrs(queue, handler string) metric.MeasurementOption {
	k := jobKey{queue, handler}
	if v, ok := o.attrs.Load(k); ok {
		return v.(metric.MeasurementOption)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(AttrQueue.String(queue), AttrHandler.String(handler)))
	o.attrs.Store(k, opt)
	return opt
}

// jobSpanAttrs are a claimed attempt's span attributes.
func jobSpanAttrs(j observe.Job) []attribute.KeyValue {
	kv := []attribute.KeyValue{AttrJobID.Int64(j.ID), AttrQueue.String(j.Queue), AttrHandler.String(j.Handler), AttrAttempt.Int(j.Attempt)}
	if j.WorkflowID != 0 {
		kv = append(kv, AttrWorkflowID.Int64(j.WorkflowID), AttrStepIndex.Int(j.StepIndex))
	}
	return kv
}

// DispatchStart starts the dispatch span.
func (o *Observer) DispatchStart(ctx context.Context, d observe.Dispatch) context.Context {
	kv := []attribute.KeyValue{AttrKind.String(string(d.Kind))}
	switch d.Kind {
	case observe.DispatchWorkflow:
		kv = append(kv, AttrWorkflow.String(d.Name), AttrQueue.String(d.Queue))
	case observe.DispatchJob:
		kv = append(kv, AttrHandler.String(d.Name), AttrQueue.String(d.Queue))
	default:
		kv = append(kv, AttrCount.Int(d.Count))
	}
	ctx, _ = o.tracer.Start(ctx, "queuety.dispatch", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(kv...))
	return ctx
}

// DispatchEnd ends the dispatch span and counts what was written.
func (o *Observer) DispatchEnd(ctx context.Context, d observe.Dispatch, r observe.Dispatched) {
	span := trace.SpanFromContext(ctx)
	switch {
	case r.Err != nil:
		span.RecordError(r.Err)
		span.SetStatus(codes.Error, r.Err.Error())
	case d.Kind == observe.DispatchWorkflow:
		span.SetAttributes(AttrWorkflowID.Int64(r.ID))
		if !r.Existing {
			o.inst.workflows.Add(ctx, 1, metric.WithAttributes(AttrWorkflow.String(d.Name)))
		}
	case d.Kind == observe.DispatchJob:
		span.SetAttributes(AttrJobID.Int64(r.ID))
	}
	if r.Existing {
		span.SetAttributes(attribute.Bool("queuety.existing", true))
	}
	for _, j := range r.Jobs {
		o.inst.dispatched.Add(ctx, 1, o.jobAttrs(j.Queue, j.Handler))
	}
	span.End()
}

// Claimed records a claim span for a claim that took jobs or failed (an
// idle poll leaves no span), and the claim's measurements.
func (o *Observer) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 && c.Err == nil {
		return ctx
	}
	queues := strings.Join(c.Queues, ",")
	ctx, span := o.tracer.Start(ctx, "queuety.claim", trace.WithTimestamp(c.Started), trace.WithAttributes(
		AttrQueues.String(queues), attribute.Int("queuety.claim.limit", c.Limit), AttrCount.Int(len(c.Jobs))))
	if c.Err != nil {
		span.RecordError(c.Err)
		span.SetStatus(codes.Error, c.Err.Error())
	}
	span.End(trace.WithTimestamp(c.Started.Add(c.Duration)))
	if len(c.Jobs) > 0 {
		qs := metric.WithAttributes(AttrQueues.String(queues))
		o.inst.batch.Record(ctx, int64(len(c.Jobs)), qs)
		o.inst.claimDur.Record(ctx, c.Duration.Seconds(), qs)
	}
	for _, j := range c.Jobs {
		o.inst.claimed.Add(ctx, 1, o.jobAttrs(j.Queue, j.Handler))
		o.inst.wait.Record(ctx, j.Wait.Seconds(), metric.WithAttributes(AttrQueue.String(j.Queue)))
	}
	return ctx
}

// JobStart starts the attempt's process span.
func (o *Observer) JobStart(ctx context.Context, j observe.Job) context.Context {
	ctx, _ = o.tracer.Start(ctx, "queuety.process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(jobSpanAttrs(j)...))
	return ctx
}

// HandlerStart starts the handler span, a child of the process span.
func (o *Observer) HandlerStart(ctx context.Context, j observe.Job) context.Context {
	ctx, _ = o.tracer.Start(ctx, "queuety.handler", trace.WithAttributes(jobSpanAttrs(j)...))
	return ctx
}

// HandlerEnd ends the handler span, with the handler's error, and records
// its duration.
func (o *Observer) HandlerEnd(ctx context.Context, j observe.Job, h observe.Handled) {
	span := trace.SpanFromContext(ctx)
	if h.Err != nil {
		span.RecordError(h.Err)
		span.SetStatus(codes.Error, h.Err.Error())
	}
	span.End()
	o.inst.handler.Record(ctx, h.Duration.Seconds(), o.jobAttrs(j.Queue, j.Handler))
}

// JobEnd records the completion span, ends the process span with the
// outcome, and counts it.
func (o *Observer) JobEnd(ctx context.Context, j observe.Job, e observe.Ended) {
	span := trace.SpanFromContext(ctx)
	outcome := AttrOutcome.String(string(e.Outcome))
	if e.Recorded > 0 {
		end := time.Now()
		_, c := o.tracer.Start(ctx, "queuety.complete", trace.WithTimestamp(end.Add(-e.Recorded)),
			trace.WithAttributes(AttrJobID.Int64(j.ID), outcome))
		c.End(trace.WithTimestamp(end))
	}
	span.SetAttributes(outcome)
	if e.Category != "" {
		span.SetAttributes(AttrCategory.String(string(e.Category)))
	}
	if e.Outcome.Failed() || e.Outcome == observe.OutcomeUnrecorded {
		msg := string(e.Outcome)
		if e.Err != nil {
			msg = e.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()

	attrs := o.jobAttrs(j.Queue, j.Handler)
	switch e.Outcome {
	case observe.OutcomeCompleted:
		o.inst.completed.Add(ctx, 1, attrs)
		return
	case observe.OutcomeRetried:
		o.inst.retried.Add(ctx, 1, attrs)
	case observe.OutcomeBuried:
		o.inst.buried.Add(ctx, 1, attrs)
	default:
		return
	}
	o.inst.failed.Add(ctx, 1, attrs)
	if e.Category != "" {
		o.inst.errors.Add(ctx, 1, metric.WithAttributes(AttrQueue.String(j.Queue), AttrHandler.String(j.Handler),
			AttrCategory.String(string(e.Category))))
	}
}

// Swept measures a maintenance sweep, and counts the schedule slots a
// tick missed.
func (o *Observer) Swept(ctx context.Context, s observe.Sweep) {
	attrs := metric.WithAttributes(AttrSweep.String(s.Name))
	o.inst.sweepDur.Record(ctx, s.Duration.Seconds(), attrs)
	o.inst.sweepRows.Add(ctx, int64(s.Rows), attrs)
	if s.Missed > 0 {
		o.inst.slotsMissed.Add(ctx, int64(s.Missed))
	}
	if s.Err != nil {
		o.inst.sweepErrs.Add(ctx, 1, attrs)
	}
}

// HandlerAbandoned keeps queuety.handlers.abandoned (abandoned handlers
// still running) and queuety.workers.unhealthy, and counts abandonments
// in queuety.handler.abandons.
func (o *Observer) HandlerAbandoned(ctx context.Context, j observe.Job, a observe.Abandon) {
	attrs := o.jobAttrs(j.Queue, j.Handler)
	if a.Returned {
		o.inst.abandoned.Add(ctx, -1, attrs)
	} else {
		o.inst.abandoned.Add(ctx, 1, attrs)
		o.inst.abandons.Add(ctx, 1, attrs)
	}
	switch now, was := a.Unhealthy(), a.WasUnhealthy(); {
	case now && !was:
		o.inst.unhealthy.Add(ctx, 1)
	case was && !now:
		o.inst.unhealthy.Add(ctx, -1)
	}
}
