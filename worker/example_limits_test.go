package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// A rate limit holds across every worker on the database: here 3 starts
// per minute, so a drain runs three of the five jobs and leaves the others
// pending, untouched, for when the window has room again.
func ExampleRateLimit() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	for i := range 5 {
		_, _ = q.Dispatch(ctx, "call_api", queuety.State{"i": i})
	}
	w := worker.New(q, worker.RateLimit("call_api", 3, time.Minute), worker.WithLogger(quiet()))
	w.HandleJob("call_api", func(context.Context, queuety.Payload) error { return nil })
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("ran:", st.Succeeded)
	// Output: ran: 3
}

// Jobs of one concurrency group run at most the group's limit at a time
// across the fleet; cost units weigh them against cost budgets.
func ExampleGroupLimit() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	for i := range 4 {
		_, _ = q.Dispatch(ctx, "call_llm", queuety.State{"i": i},
			queuety.ConcurrencyGroup("openai"), queuety.CostUnits(2))
	}
	w := worker.New(q, worker.GroupLimit("openai", 2), worker.CostBudget(4), worker.WithLogger(quiet()))
	w.HandleJob("call_llm", func(context.Context, queuety.Payload) error { return nil })
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("ran:", st.Succeeded)
	// Output: ran: 4
}

// A handler that ignores its context past its timeout is abandoned after
// the abandon grace: its attempt is recorded as failed, as a timeout
// would be, and its slot runs the jobs behind it while it runs on.
func ExampleAbandonGrace() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	_, _ = q.Dispatch(ctx, "stuck", nil, queuety.StartToClose(time.Second), queuety.MaxAttempts(1))
	for i := range 3 {
		_, _ = q.Dispatch(ctx, "quick", queuety.State{"i": i})
	}
	release := make(chan struct{})
	w := worker.New(q, worker.Concurrency(1), worker.AbandonGrace(100*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleJob("stuck", func(context.Context, queuety.Payload) error {
		<-release // never looks at its context
		return nil
	})
	w.HandleJob("quick", func(context.Context, queuety.Payload) error { return nil })
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("abandoned:", st.Abandoned, "failed:", st.Failed, "succeeded:", st.Succeeded)
	fmt.Println("still running:", w.Health().Abandoned, "healthy:", w.Health().Healthy())

	close(release)
	for w.Health().Abandoned > 0 { // the late result is refused as stale
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// abandoned: 1 failed: 1 succeeded: 3
	// still running: 1 healthy: true
}
