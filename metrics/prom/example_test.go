package prom_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// Register the metrics, install them as the client's observer, add the
// store gauges and serve /metrics.
func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		panic(err)
	}
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithObserver(m), queuety.WithLogger(quiet()))
	if err != nil {
		panic(err)
	}
	defer q.Close()
	if err := m.RegisterClient(q); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(prom.Handler(reg)) // http.Handle("/metrics", prom.Handler(reg)) in a server
	defer srv.Close()

	for range 3 {
		if _, err := q.Dispatch(ctx, "send_email", nil); err != nil {
			panic(err)
		}
	}
	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("send_email", func(context.Context, queuety.Payload) error { return nil })
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		panic(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	fmt.Println("lint problems:", len(problems), err)
	n, err := testutil.GatherAndCount(reg, "queuety_jobs_completed_total", "queuety_queue_depth")
	fmt.Println("series:", n, err)
	// Output:
	// lint problems: 0 <nil>
	// series: 6 <nil>
}
