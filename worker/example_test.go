package worker_test

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// A worker with step handlers runs a workflow's steps in order; RunOnce
// drains what is due and returns, the way a cron-started worker does.
func ExampleWorker_RunOnce() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	_, _ = q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "greet", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "lookup"},
		{Type: queuetytype.StepSingle, Handler: "greet"},
	}}, queuety.State{"user_id": 7})

	w := worker.New(q, worker.Concurrency(4), worker.WithLogger(quiet()))
	w.HandleStep("lookup", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"name": "Ana"}, nil
	})
	w.HandleStep("greet", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		fmt.Println("hello,", s.String("name"))
		return nil, nil
	})
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("steps run:", st.Succeeded)
	// Output:
	// hello, Ana
	// steps run: 2
}

// Run works until its context is cancelled. With signal.NotifyContext,
// SIGINT or SIGTERM stops claiming, lets running handlers finish (up to the
// shutdown timeout) and hands back anything interrupted.
func ExampleWorker_Run() {
	q, _ := queuety.Open(context.Background(), "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	w := worker.New(q, worker.Queues("critical", "default"), worker.Concurrency(16),
		worker.ShutdownTimeout(30*time.Second), worker.WithLogger(quiet()))
	w.HandleJob("resize_image", func(ctx context.Context, p queuety.Payload) error { return nil })

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // stands in for a signal here
	defer cancel()
	fmt.Println(w.Run(ctx))
	// Output: <nil>
}

// Adaptive concurrency, Queuety PHP's --min-workers/--max-workers: the
// worker runs between 2 and 16 handlers at once, growing with the jobs
// waiting and shrinking once none has waited for the idle grace; every
// attempt is limited to 5 minutes (QUEUETY_MAX_EXECUTION_TIME).
func ExampleAdaptiveConcurrency() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	w := worker.New(q, worker.WithLogger(quiet()),
		worker.AdaptiveConcurrency(2, 16), worker.ScaleInterval(5*time.Second), worker.ScaleIdleGrace(15*time.Second),
		worker.MaxExecutionTime(5*time.Minute))
	fmt.Println("at most", w.Concurrency(), "at once; Run starts at 2")
	// Output: at most 16 at once; Run starts at 2
}
