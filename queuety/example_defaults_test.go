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

// A handler with defaults and a bury hook, Queuety PHP's config() and
// failed(): dispatches that set nothing take the handler's queue and
// attempts; the hook runs once the job is buried.
func ExampleRegistry_Defaults() {
	ctx := context.Background()
	reg := queuety.NewRegistry()
	reg.HandleJob("send_invoice", func(ctx context.Context, p queuety.Payload) error {
		return errors.New("mail server down")
	})
	reg.Defaults("send_invoice", queuety.OnQueue("billing"), queuety.Retry(2, queuety.BackoffSeconds(0)))
	reg.OnBuried("send_invoice", func(ctx context.Context, job *queuetytype.Job, err error) {
		fmt.Println("buried job on", job.Queue, "after", job.Attempts, "attempts:", err)
	})

	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()), queuety.WithRegistry(reg))
	defer q.Close()
	id, _ := q.Dispatch(ctx, "send_invoice", queuety.State{"invoice": 42})
	j, _ := q.Job(ctx, id)
	fmt.Println("queue:", j.Queue, "max attempts:", j.MaxAttempts)

	w := worker.New(q, worker.Queues("billing"), worker.WithLogger(quiet())) // uses the client's registry
	_, _ = w.RunOnce(ctx, 10*time.Second)
	// Output:
	// queue: billing max attempts: 2
	// buried job on billing after 2 attempts: mail server down
}
