//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// wokenWithin is how soon a listener must hear a send: well under the
// 20 s of a listening sleep, whose natural end is no wake-up.
const wokenWithin = 10 * time.Second

// TestGaleraWake: a process's commit wakes the idle workers of processes
// connected to other nodes of a cluster, with a DSN naming every node and
// with a single-host DSN (the nodes read from wsrep_incoming_addresses),
// and goes on waking them while another node hangs.
func TestGaleraWake(t *testing.T) {
	c := galera.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE galera_wake")
	require.NoError(t, err)

	t.Run("MultiHostDSN", func(t *testing.T) {
		send := openWakeStore(ctx, t, failoverDSN(c, 0, "galera_wake", "mh_"))
		woken := listenOn(ctx, t, c, 1, "mh_")
		require.NoError(t, send.NotifyJobs(ctx))
		waitWoken(t, woken, "a listener on node2, the send from a multi-host DSN connected to node1")
	})
	t.Run("SingleHostDSN", func(t *testing.T) {
		send := openWakeStore(ctx, t, c.Node(0).DSN("galera_wake", "sh_"))
		woken2 := listenOn(ctx, t, c, 1, "sh_")
		woken3 := listenOn(ctx, t, c, 2, "sh_")
		for range 3 {
			require.NoError(t, send.NotifyJobs(ctx))
			waitWoken(t, woken2, "a listener on node2, the send from node1")
			waitWoken(t, woken3, "a listener on node3, the send from node1")
		}
	})
	t.Run("Worker", func(t *testing.T) {
		// A job dispatched through node1 starts at once on an idle worker
		// connected to node2 that polls every 30 s.
		dispatch, ran := wakeWorker(ctx, t, c, 30*time.Second, "wk_")
		for i := range 3 {
			start := time.Now()
			_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": i})
			require.NoError(t, err)
			select {
			case <-ran:
				t.Logf("job %d started %s after its dispatch", i, time.Since(start).Round(time.Millisecond))
			case <-time.After(wokenWithin):
				t.Fatalf("job %d dispatched through node1 did not start within %s on the worker through node2 (it polls every 30 s)", i, wokenWithin)
			}
			// After a job the worker polls again soon: wait until it is
			// idle and its listener sleeps before the next.
			waitListening(ctx, t, c.Node(1), "wk_")
		}
	})
	t.Run("NodeHangs", func(t *testing.T) {
		send := openWakeStore(ctx, t, c.Node(0).DSN("galera_wake", "nh_"))
		woken := listenOn(ctx, t, c, 1, "nh_")
		require.NoError(t, send.NotifyJobs(ctx)) // the store has learned the nodes
		waitWoken(t, woken, "a listener on node2 before node3 hangs")
		waitListening(ctx, t, c.Node(1), "nh_")
		// node3 stops answering without closing its port: connections to
		// it hang instead of failing.
		pid := c.Node(2).Pid()
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		for i := range 5 {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second) // as the engine sends
			_ = send.NotifyJobs(sctx)                               // node3's part may fail
			cancel()
			within := wokenWithin
			if i == 0 {
				// The cluster stalls until it evicts node3 (3 s of
				// silence here): node2's causal read waits for it.
				within = 3 * wokenWithin
			}
			waitWokenWithin(t, woken, within, "a listener on node2 while node3 hangs")
			waitListening(ctx, t, c.Node(1), "nh_")
		}
	})
}

// openWakeStore opens the MySQL store on dsn, without migrating: the
// wake-up touches no table.
func openWakeStore(ctx context.Context, t *testing.T, dsn string) *mysql.Store {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	s, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// listenOn starts a wake-up listener for prefix through node i on a
// single-host DSN, waits until it sleeps, and returns the channel that
// receives its wake-ups (the one of its start already taken).
func listenOn(ctx context.Context, t *testing.T, c *galera.Cluster, i int, prefix string) <-chan struct{} {
	t.Helper()
	s := openWakeStore(ctx, t, c.Node(i).DSN("galera_wake", prefix))
	woken := make(chan struct{}, 64)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ListenJobs(lctx, func() { woken <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitWoken(t, woken, "the listener's start")
	waitListening(ctx, t, c.Node(i), prefix)
	return woken
}

// waitListening waits until a wake-up listener for prefix sleeps on node n.
func waitListening(ctx context.Context, t *testing.T, n *galera.Node, prefix string) {
	t.Helper()
	db, err := sql.Open("mysql", n.DriverDSN(""))
	require.NoError(t, err)
	defer db.Close()
	waitFor(ctx, t, "a wake-up listener sleeping on "+n.Name(), func() bool {
		var k int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ?",
			"SELECT SLEEP(%) AS queuety_go_wake, '%."+prefix+"queuety\\_jobs' AS jobs\\_table").Scan(&k)
		return err == nil && k > 0
	})
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func waitWoken(t *testing.T, woken <-chan struct{}, what string) {
	t.Helper()
	waitWokenWithin(t, woken, wokenWithin, what)
}

func waitWokenWithin(t *testing.T, woken <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-woken:
	case <-time.After(d):
		t.Fatalf("%s: not woken within %s", what, d)
	}
}

// wakeWorker migrates prefix's tables and starts a worker through node2
// polling every poll, and returns a client on node1 to dispatch with and
// the channel that receives the start time of each job the worker runs.
func wakeWorker(ctx context.Context, t *testing.T, c *galera.Cluster, poll time.Duration, prefix string) (*queuety.Client, <-chan time.Time) {
	t.Helper()
	dispatch, err := queuety.Open(ctx, c.Node(0).DSN("galera_wake", prefix), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { dispatch.Close() })
	require.NoError(t, dispatch.Migrate(ctx))
	workerSide, err := queuety.Open(ctx, c.Node(1).DSN("galera_wake", prefix), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { workerSide.Close() })
	ran := make(chan time.Time, 64)
	w := worker.New(workerSide, worker.NoMaintenance(), worker.PollInterval(poll), worker.WithLogger(quietLog()))
	w.HandleJob("ping", func(context.Context, queuety.Payload) error {
		ran <- time.Now()
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitListening(ctx, t, c.Node(1), prefix)
	return dispatch, ran
}

// TestGaleraWakeLatency, which runs only when QUEUETY_GALERA_WAKE_LATENCY
// is set (to the number of jobs, default 40), measures dispatch-to-start
// latency across nodes: jobs dispatched one at a time through node1, each
// 0.2 to 0.9 s (plus QUEUETY_GALERA_WAKE_PAUSE) after the previous has
// started and the worker through node2 (default poll intervals) is idle
// again.
func TestGaleraWakeLatency(t *testing.T) {
	v := os.Getenv("QUEUETY_GALERA_WAKE_LATENCY")
	if v == "" {
		t.Skip("set QUEUETY_GALERA_WAKE_LATENCY to measure")
	}
	jobs, err := strconv.Atoi(v)
	if err != nil || jobs <= 0 {
		jobs = 40
	}
	// QUEUETY_GALERA_WAKE_PAUSE (a duration) lengthens the pauses, so the
	// worker has gone from polling after work to idle polling.
	pause, _ := time.ParseDuration(os.Getenv("QUEUETY_GALERA_WAKE_PAUSE"))
	c := galera.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE galera_wake")
	require.NoError(t, err)
	dispatch, ran := wakeWorker(ctx, t, c, time.Second, "lat_")
	var ms []float64
	for i := range jobs {
		start := time.Now()
		_, err := dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": i})
		require.NoError(t, err)
		select {
		case at := <-ran:
			ms = append(ms, float64(at.Sub(start).Microseconds())/1000)
		case <-time.After(time.Minute):
			t.Fatalf("job %d did not start", i)
		}
		// The worker polls again soon after a job: the next dispatch
		// waits until it is idle, its listener asleep, at a random phase
		// of its poll.
		waitListening(ctx, t, c.Node(1), "lat_")
		time.Sleep(pause + time.Duration(200+i*37%700)*time.Millisecond)
	}
	slices.Sort(ms)
	p := func(q float64) float64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	parts := make([]string, len(ms))
	for i, x := range ms {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	t.Logf("cross-node dispatch-to-start over %d jobs: median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms", len(ms), p(0.5), p(0.9), p(0.99), ms[len(ms)-1])
	t.Logf("all (ms, sorted): %s", strings.Join(parts, " "))
}
