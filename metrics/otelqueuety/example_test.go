package otelqueuety_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/queuety/queuety-go/metrics/otelqueuety"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// Trace a dispatch and the attempt that runs it. Here the spans go to an
// in-memory recorder; in an application, pass the TracerProvider and
// MeterProvider of your OpenTelemetry SDK setup (or none, for the global
// ones).
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	obs, err := otelqueuety.New(otelqueuety.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithObserver(obs), queuety.WithLogger(quiet()))
	if err != nil {
		panic(err)
	}
	defer q.Close()
	if _, err := q.Dispatch(ctx, "send_email", queuety.State{"to": "ana@example.com"}); err != nil {
		panic(err)
	}
	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("send_email", func(ctx context.Context, _ queuety.Payload) error {
		_, span := tp.Tracer("app").Start(ctx, "smtp.send") // nests under queuety.handler
		span.End()
		return nil
	})
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		panic(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// queuety.dispatch
	// queuety.claim
	// smtp.send
	// queuety.handler
	// queuety.complete
	// queuety.process
}
