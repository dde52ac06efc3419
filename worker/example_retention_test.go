package worker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// A long-running worker cleans up as it goes: completed jobs and their
// log rows go after 7 days, finished workflows with their rows after 30.
// Retain changes the ages; a negative age keeps those rows forever, and
// NoRetention turns the cleaner off. One worker of a fleet cleans at a
// time. Here the client's fake clock stands in for eight days passing.
func ExampleRetain() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := q.Dispatch(ctx, "send_email", nil)

	cleaned := make(chan struct{})
	w := worker.New(q, worker.WithLogger(quiet()),
		worker.Retain(worker.Retention{
			Completed: 7 * 24 * time.Hour,  // completed jobs (and, by default, log rows)
			Workflows: 90 * 24 * time.Hour, // finished workflows with their events, signals, artifacts
			Buried:    -1,                  // keep buried jobs for an operator (the default)
			Interval:  time.Hour,           // a pass every hour
		}),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, err error) {
			if task == worker.SweepRetention && n > 0 {
				close(cleaned)
			}
		}}))
	w.HandleJob("send_email", func(context.Context, queuety.Payload) error { return nil })
	_, _ = w.RunOnce(ctx, 10*time.Second)
	clock.Advance(8 * 24 * time.Hour)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }() // the first pass runs at start
	<-cleaned
	stop()
	<-done
	_, err := q.Job(ctx, id)
	fmt.Println("job deleted:", errors.Is(err, queuetytype.ErrNotFound))
	// Output: job deleted: true
}
