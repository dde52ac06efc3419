package builder_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// A planner starts one agent workflow per task and waits for all of them
// (Queuety's start_agents() and wait_for_agents()).
func ExampleBuilder_StartAgents() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	w := worker.New(q)
	w.HandleStep("plan", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"tasks": []string{"pricing", "churn"}}, nil
	})
	w.HandleStep("research", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"finding": s.String(builder.AgentTaskKey) + " looks fine"}, nil
	})
	w.HandleStep("summarize", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		results, _ := s[builder.AgentResultsKey].(map[string]any)
		return queuety.State{"agents_done": len(results)}, nil
	})

	id, err := builder.Workflow("planner").
		Then("plan").
		StartAgents("tasks", builder.Workflow("agent").Then("research")).
		WaitForAgents(""). // the ids StartAgents stored under agent_workflow_ids
		Then("summarize").
		Dispatch(ctx, q, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	state, _ := q.State(ctx, id)
	fmt.Println(state["agents_done"])
	// Output: 2
}

// One signal name serves many workflows: each order's wait counts only
// the "paid" signal carrying its own order_id, and only a card payment.
func ExampleCorrelationKey() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	w := worker.New(q)
	w.HandleStep("ship", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"shipped": true}, nil
	})

	order := builder.Workflow("order").
		WaitForSignal("paid", builder.CorrelationKey("order_id"), builder.MatchPayload(queuety.State{"method": "card"})).
		Then("ship")
	id7, _ := order.Dispatch(ctx, q, queuety.State{"order_id": 7})
	id8, _ := order.Dispatch(ctx, q, queuety.State{"order_id": 8})
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	for _, id := range []int64{id7, id8} {
		_ = q.Signal(ctx, id, "paid", queuety.State{"order_id": 7, "method": "card"})
	}
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	for _, id := range []int64{id7, id8} {
		wf, _ := q.Workflow(ctx, id)
		fmt.Println(wf.Status)
	}
	// Output:
	// completed
	// waiting_for_signal
}
