package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestWorkflowAdvanceWakesAnotherProcess: the jobs a workflow advance
// commits (a step's next job, a for-each's branch jobs, a sub-workflow's
// first step) start at once on
// an idle worker of another client, whose poll interval is 30 s, when the
// completing worker cannot run them. Process A (its own client and
// worker) runs the workflow up to the advance, held until process B (its
// own client, on a different DSN so no in-process wake-up reaches it) has
// claimed nothing and sleeps; only B has the next handler.
func TestWorkflowAdvanceWakesAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		name, hold string
		flow       func() *builder.Builder
	}{
		{"next step", "a.first", func() *builder.Builder { return builder.Workflow("adv.step").Then("a.first").Then("b.next") }},
		{"for-each branches", "__queuety_for_each", func() *builder.Builder { return builder.Workflow("adv.each").ForEach("items", "b.item") }},
		{"sub-workflow", "__queuety_run_workflow", func() *builder.Builder {
			return builder.Workflow("adv.parent").RunWorkflow("kid", builder.Workflow("adv.kid").Then("b.next"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn, prefix := migrated.DSN(t)

			a, hold := holdingProcess(t, ctx, dsn, tc.hold, func(w *worker.Worker) {
				w.HandleStep("a.first", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
			})

			_, err := tc.flow().Dispatch(ctx, a, queuety.State{"items": []any{1, 2, 3}})
			require.NoError(t, err)
			// A claimed the job whose completion advances the workflow.
			awaitSignal(t, hold.held, "worker A did not start the workflow's first job")

			ran := make(chan string, 8)
			idleProcess(t, ctx, dsn, prefix, func(w *worker.Worker) {
				w.HandleStep("b.next", func(context.Context, queuety.State) (queuety.State, error) { ran <- "b.next"; return nil, nil })
				w.HandleForEach("b.item", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
					ran <- fmt.Sprint("b.item ", item)
					return nil, nil
				})
			})

			close(hold.release)
			t.Logf("B started %s", awaitWoken(t, ran, "the advance's job", "the advance"))
		})
	}
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, ctx context.Context, w *worker.Worker) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
