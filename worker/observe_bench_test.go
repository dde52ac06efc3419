package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/metrics/otelqueuety"
	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// BenchmarkObservedDrain measures the claim, run and complete path of a
// worker draining b.N no-op jobs, per job, without an observer and with
// each kind: the no-op one (the cost of the calls), Prometheus, and
// OpenTelemetry with the SDK's providers (spans sampled, then dropped).
//
//	go test -run '^$' -bench ObservedDrain -benchtime 20000x ./worker/
func BenchmarkObservedDrain(b *testing.B) {
	observers := []struct {
		name string
		new  func(b *testing.B) observe.Observer
	}{
		{"none", func(*testing.B) observe.Observer { return nil }},
		{"nop", func(*testing.B) observe.Observer { return observe.Nop{} }},
		{"prom", func(b *testing.B) observe.Observer {
			m, err := prom.New(prometheus.NewRegistry())
			require.NoError(b, err)
			return m
		}},
		{"otel", func(b *testing.B) observe.Observer {
			tp := sdktrace.NewTracerProvider()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
			o, err := otelqueuety.New(otelqueuety.Config{TracerProvider: tp, MeterProvider: mp})
			require.NoError(b, err)
			return o
		}},
	}
	stores := []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "q.db") }},
		{"mysql", func(b *testing.B) string { dsn, _ := migrated.DSN(b); return dsn }},
	}
	for _, st := range stores {
		for _, o := range observers {
			b.Run(st.name+"/"+o.name, func(b *testing.B) { benchDrain(b, st.dsn(b), o.new(b)) })
		}
	}
}

func benchDrain(b *testing.B, dsn string, obs observe.Observer) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithObserver(obs))
	require.NoError(b, err)
	defer c.Close()
	reqs := make([]queuety.JobRequest, b.N)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "noop"}
	}
	_, err = c.DispatchMany(ctx, reqs)
	require.NoError(b, err)
	w := worker.New(c, worker.Concurrency(32), worker.WithLogger(quiet()))
	w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
	b.ReportAllocs()
	b.ResetTimer()
	st, err := w.RunOnce(ctx, 10*time.Minute)
	b.StopTimer()
	require.NoError(b, err)
	require.Equal(b, int64(b.N), st.Succeeded, "jobs run")
}
