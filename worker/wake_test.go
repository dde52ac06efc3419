package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestDispatchWakesIdleWorker: with a poll interval of an hour, jobs and
// workflows dispatched through the worker's own client start at once, on
// both stores: the engine wakes the idle worker on commit.
func TestDispatchWakesIdleWorker(t *testing.T) {
	mysqlDSN, _ := testdb.DSN(t)
	for name, dsn := range map[string]string{
		"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "q.db"),
		"mysql":  mysqlDSN,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			idle := make(chan struct{}, 1) // an empty claim: the worker is about to wait
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithObserver(emptyClaims(idle)))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			ran := make(chan string, 8)
			w := worker.New(c, worker.PollInterval(time.Hour), worker.NoMaintenance(), worker.WithLogger(quiet()))
			w.HandleJob("wake.job", func(context.Context, queuety.Payload) error { ran <- "job"; return nil })
			w.HandleStep("wake.step", func(context.Context, queuety.State) (queuety.State, error) { ran <- "step"; return nil, nil })
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()

			wait := func(what string) {
				t.Helper()
				select {
				case got := <-ran:
					require.Equal(t, what, got)
				case <-time.After(10 * time.Second): // far below the hour-long poll
					t.Fatalf("%s did not start: the idle worker was not woken", what)
				}
			}
			idleNow := func() {
				t.Helper()
				select {
				case <-idle:
				case <-time.After(30 * time.Second):
					t.Fatal("the worker made no empty claim")
				}
			}
			idleNow()
			_, err = c.Dispatch(ctx, "wake.job", nil)
			require.NoError(t, err)
			wait("job")
			idleNow()
			_, err = builder.Workflow("wake").Then("wake.step").Dispatch(ctx, c, nil)
			require.NoError(t, err)
			wait("step")
			idleNow()
			_, err = c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "wake.job"}})
			require.NoError(t, err)
			wait("job")
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// emptyClaims signals ch (without blocking) after every claim that found
// nothing.
type emptyClaimObserver struct {
	observe.Nop
	ch chan struct{}
}

func emptyClaims(ch chan struct{}) observe.Observer { return emptyClaimObserver{ch: ch} }

func (e emptyClaimObserver) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 && c.Err == nil {
		select {
		case e.ch <- struct{}{}:
		default:
		}
	}
	return ctx
}
