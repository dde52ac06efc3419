package queuety_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// A time series of the last three minutes in one-minute buckets: each
// minute a worker finishes some jobs and one fails for good.
func ExampleClient_MetricSeries() {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := queuety.NewFakeClock(start)
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("resize", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("upload", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("bucket gone")) })
	for minute := range 3 {
		clock.Set(start.Add(time.Duration(minute)*time.Minute + 10*time.Second))
		for range minute + 2 {
			_, _ = q.Dispatch(ctx, "resize", nil)
		}
		_, _ = q.Dispatch(ctx, "upload", nil)
		_, _ = w.RunOnce(ctx, time.Minute)
	}

	s, err := q.MetricSeries(ctx, queuetytype.SeriesQuery{Until: start.Add(3 * time.Minute), Span: 3 * time.Minute, Buckets: 3})
	if err != nil {
		panic(err)
	}
	for _, b := range s.Buckets {
		fmt.Printf("%s completed %d, failed %d\n", b.Start.Format("15:04"), b.Completed, b.Failed)
	}
	// Output:
	// 09:00 completed 2, failed 1
	// 09:01 completed 3, failed 1
	// 09:02 completed 4, failed 1
}
