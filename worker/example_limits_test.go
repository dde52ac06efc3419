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
