package otelqueuety_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/metrics/otelqueuety"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type env struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	obs    *otelqueuety.Observer
	c      *queuety.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := otelqueuety.New(otelqueuety.Config{TracerProvider: tp, MeterProvider: mp})
	require.NoError(t, err)
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()), queuety.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &env{spans: sr, reader: reader, obs: obs, c: c}
}

// ended returns the ended spans named name.
func (e *env) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// spanFor returns the ended span named name whose queuety.job_id is id.
func (e *env) spanFor(t *testing.T, name string, id int64) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range e.ended(name) {
		if v, ok := attrs(s)[otelqueuety.AttrJobID]; ok && v.AsInt64() == id {
			return s
		}
	}
	require.Failf(t, "span not found", "no ended %s span for job %d", name, id)
	return nil
}

// run runs a worker until cond holds.
func run(t *testing.T, w *worker.Worker, cond func() bool) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, cond, 30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)
}

func childOf(t *testing.T, child, parent sdktrace.ReadOnlySpan, what string) {
	t.Helper()
	assert.Equalf(t, parent.SpanContext().TraceID(), child.SpanContext().TraceID(), "%s: same trace", what)
	assert.Equalf(t, parent.SpanContext().SpanID(), child.Parent().SpanID(), "%s: parent span", what)
}

// TestSpansOfAJobAndAWorkflowStep runs a failing plain job and a workflow
// step on a real worker and checks the span tree and attributes: claim →
// process → handler and complete; the handler's error on the handler span
// and the process span; the handler's own span under the handler span.
func TestSpansOfAJobAndAWorkflowStep(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	jobID, err := e.c.Dispatch(ctx, "boom", queuety.State{"x": 1}, queuety.Retry(1))
	require.NoError(t, err)
	wfID, err := builder.Workflow("wf").Then("step_one").Dispatch(ctx, e.c, queuety.State{"n": 1})
	require.NoError(t, err)

	var stepTrace trace.SpanContext
	w := worker.New(e.c, worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()), worker.NoMaintenance())
	w.HandleJob("boom", func(context.Context, queuety.Payload) error { return errors.New("kaboom") })
	w.HandleStep("step_one", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("app").Start(ctx, "app.work")
		stepTrace = span.SpanContext()
		span.End()
		return queuety.State{"done": true}, nil
	})
	run(t, w, func() bool {
		wf, err := e.c.Workflow(ctx, wfID)
		require.NoError(t, err)
		j, err := e.c.Job(ctx, jobID)
		require.NoError(t, err)
		return wf.Status == queuetytype.WorkflowCompleted && j.Status == queuetytype.JobBuried && len(e.ended("queuety.process")) == 2
	})

	// Dispatch spans: one per call, producer kind, with the ids.
	dispatches := e.ended("queuety.dispatch")
	require.Len(t, dispatches, 2, "dispatch spans")
	assert.Equal(t, trace.SpanKindProducer, dispatches[0].SpanKind())
	assert.Equal(t, jobID, attrs(dispatches[0])[otelqueuety.AttrJobID].AsInt64(), "dispatch span: job id")
	assert.Equal(t, "boom", attrs(dispatches[0])[otelqueuety.AttrHandler].AsString())
	assert.Equal(t, wfID, attrs(dispatches[1])[otelqueuety.AttrWorkflowID].AsInt64(), "dispatch span: workflow id")
	assert.Equal(t, "wf", attrs(dispatches[1])[otelqueuety.AttrWorkflow].AsString())

	// The failing plain job.
	process := e.spanFor(t, "queuety.process", jobID)
	handler := e.spanFor(t, "queuety.handler", jobID)
	complete := e.spanFor(t, "queuety.complete", jobID)
	claims := e.ended("queuety.claim")
	require.NotEmpty(t, claims, "claim spans")
	var claim sdktrace.ReadOnlySpan
	for _, c := range claims {
		if c.SpanContext().SpanID() == process.Parent().SpanID() {
			claim = c
		}
	}
	require.NotNil(t, claim, "the process span's parent is a claim span")
	childOf(t, process, claim, "process under claim")
	childOf(t, handler, process, "handler under process")
	childOf(t, complete, process, "complete under process")
	assert.Equal(t, trace.SpanKindConsumer, process.SpanKind())
	pa := attrs(process)
	assert.Equal(t, "default", pa[otelqueuety.AttrQueue].AsString())
	assert.Equal(t, "boom", pa[otelqueuety.AttrHandler].AsString())
	assert.Equal(t, int64(1), pa[otelqueuety.AttrAttempt].AsInt64())
	assert.Equal(t, "buried", pa[otelqueuety.AttrOutcome].AsString())
	assert.Equal(t, "error", pa[otelqueuety.AttrCategory].AsString())
	assert.NotContains(t, pa, otelqueuety.AttrWorkflowID, "a plain job has no workflow id")
	assert.Equal(t, codes.Error, process.Status().Code, "process span status")
	assert.Equal(t, codes.Error, handler.Status().Code, "handler span status")
	assert.Equal(t, "kaboom", handler.Status().Description)
	require.Len(t, handler.Events(), 1, "the handler span records the error")
	assert.Equal(t, "exception", handler.Events()[0].Name)
	assert.False(t, handler.StartTime().Before(process.StartTime()), "handler starts within process")
	assert.False(t, handler.EndTime().After(process.EndTime()), "handler ends within process")

	// The workflow step.
	stepJobs, err := e.c.ListJobs(ctx, driver.JobFilter{WorkflowID: wfID})
	require.NoError(t, err)
	require.Len(t, stepJobs, 1)
	stepProcess := e.spanFor(t, "queuety.process", stepJobs[0].ID)
	stepHandler := e.spanFor(t, "queuety.handler", stepJobs[0].ID)
	childOf(t, stepHandler, stepProcess, "step handler under process")
	sa := attrs(stepProcess)
	assert.Equal(t, wfID, sa[otelqueuety.AttrWorkflowID].AsInt64(), "workflow id")
	assert.Equal(t, int64(0), sa[otelqueuety.AttrStepIndex].AsInt64(), "step index")
	assert.Equal(t, "step_one", sa[otelqueuety.AttrHandler].AsString())
	assert.Equal(t, "completed", sa[otelqueuety.AttrOutcome].AsString())
	assert.Equal(t, codes.Unset, stepProcess.Status().Code, "a completed step has no error status")
	assert.Equal(t, stepHandler.SpanContext().TraceID(), stepTrace.TraceID(), "the handler's own span is in the same trace")
	var app sdktrace.ReadOnlySpan
	for _, s := range e.ended("app.work") {
		app = s
	}
	require.NotNil(t, app, "the handler's own span")
	childOf(t, app, stepHandler, "the handler's span under the handler span")
}

// sums returns a counter's data points as attribute-set string → value.
func sums(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = int64(p.Count)
				}
			}
		}
	}
	return out
}

// TestMetricsViaManualReader checks the instruments and the store gauges
// after a worker ran jobs that complete, retry and are buried.
func TestMetricsViaManualReader(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.obs.RegisterClient(e.c)
	require.NoError(t, err)
	var reqs []queuety.JobRequest
	for range 4 {
		reqs = append(reqs, queuety.JobRequest{Handler: "ok"})
	}
	reqs = append(reqs, queuety.JobRequest{Handler: "bad", Options: []queuety.JobOption{queuety.Retry(2, queuety.BackoffSeconds(0))}})
	_, err = e.c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	_, err = e.c.Dispatch(ctx, "later", nil, queuety.Delay(time.Hour), queuety.OnQueue("idle"))
	require.NoError(t, err)

	w := worker.New(e.c, worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleJob("ok", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("bad", func(context.Context, queuety.Payload) error { return errors.New("no") })
	var rm metricdata.ResourceMetrics
	run(t, w, func() bool {
		require.NoError(t, e.reader.Collect(ctx, &rm))
		return sums(t, rm, "queuety.jobs.completed")["queuety.handler=ok,queuety.queue=default"] == 4 &&
			sums(t, rm, "queuety.jobs.buried")["queuety.handler=bad,queuety.queue=default"] == 1 &&
			sums(t, rm, "queuety.sweep.duration")["queuety.sweep=stale-recovery"] >= 1
	})
	require.NoError(t, e.reader.Collect(ctx, &rm))
	ok, bad := "queuety.handler=ok,queuety.queue=default", "queuety.handler=bad,queuety.queue=default"
	assert.Equal(t, map[string]int64{ok: 4, bad: 1, "queuety.handler=later,queuety.queue=idle": 1}, sums(t, rm, "queuety.jobs.dispatched"))
	assert.Equal(t, map[string]int64{ok: 4, bad: 2}, sums(t, rm, "queuety.jobs.claimed"))
	assert.Equal(t, map[string]int64{ok: 4}, sums(t, rm, "queuety.jobs.completed"))
	assert.Equal(t, map[string]int64{bad: 1}, sums(t, rm, "queuety.jobs.retried"))
	assert.Equal(t, map[string]int64{bad: 1}, sums(t, rm, "queuety.jobs.buried"))
	assert.Equal(t, map[string]int64{bad: 2}, sums(t, rm, "queuety.jobs.failed"))
	assert.Equal(t, map[string]int64{"queuety.error.category=error," + bad: 2}, sums(t, rm, "queuety.job.errors"))
	assert.Equal(t, map[string]int64{ok: 4, bad: 2}, sums(t, rm, "queuety.handler.duration"), "handler calls")
	assert.Equal(t, map[string]int64{"queuety.queue=default": 6}, sums(t, rm, "queuety.dispatch_to_start.duration"))
	depth := sums(t, rm, "queuety.queue.depth")
	assert.Equal(t, int64(4), depth["queuety.queue=default,queuety.status=completed"], "depth: completed")
	assert.Equal(t, int64(1), depth["queuety.queue=default,queuety.status=buried"], "depth: buried")
	assert.Equal(t, int64(1), depth["queuety.queue=idle,queuety.status=pending"], "depth: pending, not due")
}

// TestAbandonedHandlerInstruments: queuety.handlers.abandoned goes up when
// a worker abandons a handler and down when it returns,
// queuety.handler.abandons counts abandonments, and
// queuety.workers.unhealthy follows the worker's health across its limit.
func TestAbandonedHandlerInstruments(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelqueuety.New(otelqueuety.Config{MeterProvider: mp})
	require.NoError(t, err)
	ctx := context.Background()
	job := observe.Job{ID: 1, Queue: "default", Handler: "stuck"}
	key := "queuety.handler=stuck,queuety.queue=default"
	event := func(returned bool, abandoned int) {
		obs.HandlerAbandoned(ctx, job, observe.Abandon{Returned: returned, Abandoned: abandoned, MaxAbandoned: 1})
	}
	check := func(abandoned, total, unhealthy int64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		assert.Equal(t, abandoned, sums(t, rm, "queuety.handlers.abandoned")[key], "queuety.handlers.abandoned")
		assert.Equal(t, total, sums(t, rm, "queuety.handler.abandons")[key], "queuety.handler.abandons")
		assert.Equal(t, unhealthy, sums(t, rm, "queuety.workers.unhealthy")[""], "queuety.workers.unhealthy")
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
