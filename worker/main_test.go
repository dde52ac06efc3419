package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// childEnv makes the test binary act as a worker process instead of
// running tests: the crash test starts it, waits until it is running a
// job, and kills it with SIGKILL.
const childEnv = "QUEUETY_TEST_WORKER_CHILD"

// heldChildEnv makes the test binary act as a worker process that holds
// its claims and whose "crash" handler ends the process (os.Exit): the
// held crash test starts it and waits for its exit.
const heldChildEnv = "QUEUETY_TEST_HELD_CHILD"

// heldChildExit is the exit code of the held child's "crash" handler.
const heldChildExit = 3

func TestMain(m *testing.M) {
	if dsn := os.Getenv(childEnv); dsn != "" {
		os.Exit(runChildWorker(dsn))
	}
	if dsn := os.Getenv(heldChildEnv); dsn != "" {
		os.Exit(runHeldChild(dsn))
	}
	os.Exit(m.Run())
}

// runChildWorker runs a worker whose "slow" handler never returns on its
// own, until the process is killed.
func runChildWorker(dsn string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer c.Close()
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond))
	w.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// runHeldChild runs a worker that holds its claims, whose "crash" handler
// exits the process with heldChildExit while its claim is held.
func runHeldChild(dsn string) int {
	ctx := context.Background()
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), queuety.SkipMigrate())
	if err != nil {
		fmt.Fprintln(os.Stderr, "held child:", err)
		return 1
	}
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.HoldClaims(0),
		worker.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	w.HandleJob("crash", func(context.Context, queuety.Payload) error {
		os.Exit(heldChildExit)
		return nil
	})
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "held child:", err)
	}
	return 1
}
