package deadline_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// Run the sweeps once, as a cron-started process does. Two workflows are
// running; one of them is past its deadline. A fake clock stands in for the
// two hours nobody worked.
func ExampleSweeper_RunAll() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer q.Close()

	step := []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "send_invoice"}}
	late, _ := q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "invoice", Steps: step, ExecutionTimeout: time.Hour}, nil)
	onTime, _ := q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "invoice", Steps: step, ExecutionTimeout: 24 * time.Hour}, nil)
	clock.Advance(2 * time.Hour)

	report, err := deadline.New(q).RunAll(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("workflows expired:", report.WorkflowsExpired)
	for _, id := range []int64{late, onTime} {
		wf, _ := q.Workflow(ctx, id)
		fmt.Printf("workflow %d: %s %q\n", id, wf.Status, wf.ErrorMessage)
	}
	// A second sweep, here or on any other machine, finds nothing to do.
	again, _ := deadline.New(q).RunAll(ctx)
	fmt.Println("second sweep:", again.Total())
	// Output:
	// workflows expired: 1
	// workflow 1: failed "Deadline exceeded"
	// workflow 2: running ""
	// second sweep: 0
}
