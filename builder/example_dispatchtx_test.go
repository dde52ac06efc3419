package builder_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// Start a workflow in the caller's transaction: rolled back, it leaves no
// workflow, job or log row behind; committed, it runs.
func ExampleBuilder_DispatchTx() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	defer q.Close()
	flow := builder.Workflow("fulfil_order").Then("reserve_stock").Then("ship")

	tx, _ := q.DB().BeginTx(ctx, nil)
	_, _ = flow.DispatchTx(ctx, q, tx, queuety.State{"order_id": 1})
	_ = tx.Rollback()

	tx, _ = q.DB().BeginTx(ctx, nil)
	id, _ := flow.DispatchTx(ctx, q, tx, queuety.State{"order_id": 2})
	_ = tx.Commit()

	wfs, _ := q.ListWorkflows(ctx, driver.WorkflowFilter{})
	fmt.Println(len(wfs), wfs[0].ID == id, wfs[0].Status)
	// Output: 1 true running
}
