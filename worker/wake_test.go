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
			run := runWorker(t, w)

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
			require.NoError(t, run.stop(t))
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

// TestBusyWorkerPollsFast: jobs this process does not announce (written
// in the caller's own transaction, as another process's would be) are
// found within the short busy wait right after the worker found work,
// though the poll interval is an hour.
func TestBusyWorkerPollsFast(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idle := make(chan struct{}, 1)
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()), queuety.WithObserver(emptyClaims(idle)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ran := make(chan struct{}, 4)
	_, err = c.Dispatch(ctx, "busy.job", nil) // found by the first claim
	require.NoError(t, err)
	w := worker.New(c, worker.PollInterval(time.Hour), worker.NoMaintenance(), worker.WithLogger(quiet()))
	w.HandleJob("busy.job", func(context.Context, queuety.Payload) error { ran <- struct{}{}; return nil })
	run := runWorker(t, w)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the first job did not run")
	}
	// Once the first job is recorded (which wakes the worker for one more
	// claim), the next empty claim leaves it waiting for its poll.
	require.Eventually(t, func() bool { return w.Stats().Succeeded == 1 }, 10*time.Second, time.Millisecond)
	select {
	case <-idle:
	default:
	}
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("no claim after the first job was recorded: the worker is not polling fast after work")
	}
	tx, err := c.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = c.DispatchTx(ctx, tx, "busy.job", nil)
	require.NoError(t, err)
	require.NoError(t, tx.Commit()) // no wake-up: only a poll finds it
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not found by the busy worker's short poll")
	}
	require.NoError(t, run.stop(t))
}
