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

			hold := &holdObserver{handler: "a.first", held: make(chan struct{}, 1), release: make(chan struct{})}
			a, err := queuety.Open(ctx, dsn+"&timeout=11s", queuety.WithLogger(quietLog()), queuety.WithObserver(hold))
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			wa := worker.New(a, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
			wa.HandleJob("a.first", func(context.Context, queuety.Payload) error { return nil })
			wa.HandleJob("a.warm", func(context.Context, queuety.Payload) error { return nil })
			runWorker(t, ctx, wa)

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

			idle := &holdObserver{emptyClaims: make(chan struct{}, 1)}
			before := listeners(t, prefix)
			b, err := queuety.Open(ctx, dsn+"&timeout=12s", queuety.WithLogger(quietLog()), queuety.WithObserver(idle))
			require.NoError(t, err)
			t.Cleanup(func() { b.Close() })
			ran := make(chan string, 8)
			wb := worker.New(b, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.IdlePollInterval(longPoll), worker.WithLogger(quietLog()))
			wb.HandleJob("b.next", func(context.Context, queuety.Payload) error { ran <- "b.next"; return nil })
			runWorker(t, ctx, wb)
			waitNewListener(t, prefix, before)
			select {
			case <-idle.emptyClaims: // B found nothing and sleeps
			case <-time.After(startedWithin):
				t.Fatal("worker B made no empty claim")
			}

			_, err = dispatcher.Chain(queuety.JobRequest{Handler: "a.first"}, queuety.JobRequest{Handler: "b.next"}).Dispatch(ctx)
			require.NoError(t, err)
			select {
			case <-hold.held: // A claimed the chain's first job
			case <-time.After(startedWithin):
				t.Fatal("worker A did not start the chain's first job")
			}
			select {
			case <-idle.emptyClaims: // B, woken by the dispatch, found the next job waiting and sleeps again
			case <-time.After(startedWithin):
				t.Fatal("worker B made no empty claim after the dispatch")
			}

			close(hold.release)
			select {
			case got := <-ran:
				require.Equal(t, "b.next", got)
			case <-time.After(startedWithin):
				t.Fatalf("B did not start the chain's next job within %s (it polls every %s): the completion woke no other process", startedWithin, longPoll)
			}
		})
	}
}
