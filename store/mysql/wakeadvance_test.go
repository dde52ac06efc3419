package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// holdObserver makes a worker's attempts of one handler wait, before they
// start, until release is closed, and reports each held start on held.
// emptyClaims gets a signal (without blocking) after every claim that
// found nothing.
type holdObserver struct {
	observe.Nop
	handler     string
	held        chan struct{}
	release     chan struct{}
	emptyClaims chan struct{}
}

func (o *holdObserver) JobStart(ctx context.Context, j observe.Job) context.Context {
	if j.Handler == o.handler {
		o.held <- struct{}{}
		<-o.release
	}
	return ctx
}

func (o *holdObserver) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 && c.Err == nil && o.emptyClaims != nil {
		select {
		case o.emptyClaims <- struct{}{}:
		default:
		}
	}
	return ctx
}

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

			hold := &holdObserver{handler: tc.hold, held: make(chan struct{}, 1), release: make(chan struct{})}
			a, err := queuety.Open(ctx, dsn+"&timeout=11s", queuety.WithLogger(quietLog()), queuety.WithObserver(hold))
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			wa := worker.New(a, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
			wa.HandleStep("a.first", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
			runWorker(t, ctx, wa)

			_, err = tc.flow().Dispatch(ctx, a, queuety.State{"items": []any{1, 2, 3}})
			require.NoError(t, err)
			select {
			case <-hold.held: // A claimed the job whose completion advances the workflow
			case <-time.After(startedWithin):
				t.Fatal("worker A did not start the workflow's first job")
			}

			idle := &holdObserver{emptyClaims: make(chan struct{}, 1)}
			before := listeners(t, prefix)
			b, err := queuety.Open(ctx, dsn+"&timeout=12s", queuety.WithLogger(quietLog()), queuety.WithObserver(idle))
			require.NoError(t, err)
			t.Cleanup(func() { b.Close() })
			ran := make(chan string, 8)
			wb := worker.New(b, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.IdlePollInterval(longPoll), worker.WithLogger(quietLog()))
			wb.HandleStep("b.next", func(context.Context, queuety.State) (queuety.State, error) { ran <- "b.next"; return nil, nil })
			wb.HandleForEach("b.item", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
				ran <- fmt.Sprint("b.item ", item)
				return nil, nil
			})
			runWorker(t, ctx, wb)
			waitNewListener(t, prefix, before)
			select {
			case <-idle.emptyClaims: // B found nothing it can run and waits for its poll
			case <-time.After(startedWithin):
				t.Fatal("worker B made no empty claim")
			}

			close(hold.release)
			select {
			case got := <-ran:
				t.Logf("B started %s", got)
			case <-time.After(startedWithin):
				t.Fatalf("B did not start the advance's job within %s (it polls every %s): the advance woke no other process", startedWithin, longPoll)
			}
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
