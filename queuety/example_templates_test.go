package queuety_test

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

// A workflow template is registered once, at start-up, and run by name
// (Queuety's register_workflow_template() and run_workflow()).
// WorkflowTemplateJSON is the bundle Queuety PHP's
// QueuetyGo\WorkflowTemplates::load() registers on the PHP side.
func ExampleClient_RunWorkflow() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	def, err := builder.Workflow("onboarding").Then("create_account").Then("send_welcome").Definition()
	if err != nil {
		log.Fatal(err)
	}
	if err := q.RegisterWorkflowTemplate(def); err != nil {
		log.Fatal(err)
	}

	w := worker.New(q)
	w.HandleStep("create_account", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"user_id": 7}, nil
	})
	w.HandleStep("send_welcome", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		fmt.Println("welcome", s.String("email"))
		return nil, nil
	})
	for _, email := range []string{"ada@example.com", "grace@example.com"} {
		if _, err := q.RunWorkflow(ctx, "onboarding", queuety.State{"email": email}, queuety.IdempotencyKey(email)); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.WorkflowTemplates())
	// Unordered output:
	// welcome ada@example.com
	// welcome grace@example.com
	// [onboarding]
}
