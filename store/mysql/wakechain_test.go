package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestCompletedDependencyWakesAnotherProcess: a chain's next job starts
// at once on an idle worker of another client, whose poll interval is
// 30 s, when the job before it completes on a worker that does not run
// it. Process A (its own client and worker) runs the chain's first job,
// held until process B (its own client, on a different DSN so no
// in-process wake-up reaches it), which alone has the next job's handler,
// has claimed nothing and sleeps. The chain is dispatched by A, or by a
// third process after A completed a job of its own, so A learns of the
// chain only from the store.
func TestCompletedDependencyWakesAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		third bool
	}{{"dispatched by the completing process", false}, {"dispatched by a third process", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn, prefix := migrated.DSN(t)

			a, hold := holdingProcess(t, ctx, dsn, "a.first", func(w *worker.Worker) {
				w.HandleJob("a.first", func(context.Context, queuety.Payload) error { return nil })
				w.HandleJob("a.warm", func(context.Context, queuety.Payload) error { return nil })
			})

			dispatcher := a
			if tc.third {
				warm, err := a.Dispatch(ctx, "a.warm", nil)
				require.NoError(t, err)
				require.Eventually(t, func() bool {
					j, err := a.Job(ctx, warm)
					return err == nil && j.Status == queuetytype.JobCompleted
				}, startedWithin, 5*time.Millisecond, "A did not complete its own job")
				dispatcher, err = queuety.Open(ctx, dsn+"&timeout=13s", queuety.WithLogger(quietLog()))
				require.NoError(t, err)
				t.Cleanup(func() { dispatcher.Close() })
			}

			ran := make(chan string, 8)
			emptyClaims := idleProcess(t, ctx, dsn, prefix, func(w *worker.Worker) {
				w.HandleJob("b.next", func(context.Context, queuety.Payload) error { ran <- "b.next"; return nil })
			})

			_, err := dispatcher.Chain(queuety.JobRequest{Handler: "a.first"}, queuety.JobRequest{Handler: "b.next"}).Dispatch(ctx)
			require.NoError(t, err)
			awaitSignal(t, hold.held, "worker A did not start the chain's first job") // A claimed the chain's first job
			// B, woken by the dispatch, found the next job waiting and sleeps again.
			awaitSignal(t, emptyClaims, "worker B made no empty claim after the dispatch")

			close(hold.release)
			require.Equal(t, "b.next", awaitWoken(t, ran, "the chain's next job", "the completion"))
		})
	}
}
