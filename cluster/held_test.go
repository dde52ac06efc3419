//go:build galera

package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// emptyClaims reports each claim round trip that found nothing.
type emptyClaims struct {
	observe.Nop
	ch chan struct{}
}

func (o *emptyClaims) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 && c.Err == nil {
		select {
		case o.ch <- struct{}{}:
		default:
		}
	}
	return ctx
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGaleraHeldClaims: row locks are local to a Galera node, so a held
// claim (rows locked, left pending) through node1 would not keep a
// worker through node2 from claiming the same job and running it a
// second time. On a cluster the store holds no claims: a worker asked to
// logs why and claims as usual, and a job runs once while another
// node's worker keeps claiming. A store whose sessions do not replicate
// (wsrep_on=OFF in the DSN: all its writes stay on one node) still holds
// claims.
func TestGaleraHeldClaims(t *testing.T) {
	c := galera.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_held", "gh_")

	var mu sync.Mutex
	runs := 0
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	handle := func(w *worker.Worker) {
		w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
			mu.Lock()
			runs++
			mu.Unlock()
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}
	id, err := qs[0].Dispatch(ctx, "held", nil)
	require.NoError(t, err)

	var logs lockedBuffer
	a := worker.New(qs[0], worker.HoldClaims(20*time.Second), worker.PollInterval(50*time.Millisecond),
		worker.NoMaintenance(), worker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	handle(a)
	runWorker(ctx, t, a)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the worker through node1 did not start the job")
	}
	// A worker through node2, which sees the job as node2 does.
	empty := &emptyClaims{ch: make(chan struct{}, 1)}
	q2, err := queuety.Open(ctx, c.Node(1).DSN("galera_held", "gh_"), queuety.WithLogger(quietLog()), queuety.WithObserver(empty))
	require.NoError(t, err)
	t.Cleanup(func() { q2.Close() })
	b := worker.New(q2, worker.HoldClaims(20*time.Second), worker.PollInterval(50*time.Millisecond),
		worker.NoMaintenance(), worker.WithLogger(quietLog()))
	handle(b)
	runWorker(ctx, t, b)
	select {
	case <-started:
		t.Fatal("the worker through node2 started the job the worker through node1 runs")
	case <-empty.ch:
	case <-ctx.Done():
		t.Fatal("the worker through node2 made no claim")
	}
	close(release)
	check := syncedDB(t, c.Node(0), "galera_held")
	waitFor(ctx, t, "the job completed", func() bool {
		return count(ctx, t, check, "SELECT COUNT(*) FROM gh_queuety_jobs WHERE id = ? AND status = 'completed'", id) == 1
	})
	mu.Lock()
	require.Equal(t, 1, runs, "runs of the job")
	mu.Unlock()
	require.Contains(t, logs.String(), "HoldClaims ignored", "the worker's start-up log")
	require.Contains(t, logs.String(), "Galera", "the start-up log names why")

	local, err := mysql.ParseDSN(c.Node(0).DSN("galera_held", "gh_") + "&wsrep_on=OFF")
	require.NoError(t, err)
	s, err := mysql.OpenConfig(ctx, local)
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.HoldsClaims(), "a store whose sessions do not replicate holds claims")
	require.Empty(t, s.NoHeldClaims())
}

// runWorker runs w until the test ends.
func runWorker(ctx context.Context, t *testing.T, w *worker.Worker) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
}
