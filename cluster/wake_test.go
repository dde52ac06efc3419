//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
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
// connected to other nodes of a cluster, with a DSN naming every node,
// with one naming some (the others read from wsrep_incoming_addresses)
// and with a single-host DSN (the nodes read from
// wsrep_incoming_addresses),
// goes on waking them while another node is down or hangs, and wakes
// those of a node again once it is back.
func TestGaleraWake(t *testing.T) {
	c := galera.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	createWakeDatabase(ctx, t, c)

	t.Run("MultiHostDSN", func(t *testing.T) {
		send := openWakeStore(ctx, t, failoverDSN(c, 0, "galera_wake", "mh_"))
		woken := listenOn(ctx, t, c, 1, "mh_")
		require.NoError(t, send.NotifyJobs(ctx))
		waitWoken(t, woken, "a listener on node2, the send from a multi-host DSN connected to node1")
	})
	t.Run("MultiHostDSNNamingSome", func(t *testing.T) {
		// The DSN names node1 and node2: node3 is read from
		// wsrep_incoming_addresses.
		dsn := "mysql://root@127.0.0.1:" + strconv.Itoa(c.Node(0).Port) + ",127.0.0.1:" + strconv.Itoa(c.Node(1).Port) + "/galera_wake?prefix=ms_"
		send := openWakeStore(ctx, t, dsn)
		woken2 := listenOn(ctx, t, c, 1, "ms_")
		woken3 := listenOn(ctx, t, c, 2, "ms_")
		for range 3 {
			require.NoError(t, send.NotifyJobs(ctx))
			waitWoken(t, woken2, "a listener on node2, the send from a DSN naming node1 and node2")
			waitWoken(t, woken3, "a listener on node3, the send from a DSN naming node1 and node2")
		}
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
	t.Run("OwnListener", func(t *testing.T) {
		// A store's sends leave its own listener alone on every node, as
		// on a single server (its process woke its workers in-process):
		// with a DSN naming every node (each sent to on a connection of
		// its own) and with a single-host one (the pool's server).
		for _, tc := range []struct{ name, dsn, prefix string }{
			{"MultiHost", failoverDSN(c, 0, "galera_wake", "om_"), "om_"},
			{"SingleHost", c.Node(0).DSN("galera_wake", "os_"), "os_"},
		} {
			t.Run(tc.name, func(t *testing.T) { ownListenerLeftAlone(ctx, t, c, tc.dsn, tc.prefix) })
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
	t.Run("NodeStopped", func(t *testing.T) {
		// node3 shuts down cleanly and leaves the cluster in order.
		send := openWakeStore(ctx, t, failoverDSN(c, 0, "galera_wake", "ns_"))
		wakeNodeDown(ctx, t, c, send, "ns_", (*galera.Node).Stop, wokenWithin)
	})
	t.Run("NodeKilled", func(t *testing.T) {
		// node3 is SIGKILLed: the cluster stalls until it evicts node3
		// (3 s of silence here), and node2's causal read waits for it.
		send := openWakeStore(ctx, t, c.Node(0).DSN("galera_wake", "nk_"))
		wakeNodeDown(ctx, t, c, send, "nk_", (*galera.Node).Kill, 3*wokenWithin)
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

// ownListenerLeftAlone opens a store on dsn (through node1) that listens
// and sends: its sends wake another process's listener on node2 and not
// its own, which another process's send, through node3, wakes.
func ownListenerLeftAlone(ctx context.Context, t *testing.T, c *galera.Cluster, dsn, prefix string) {
	send := openWakeStore(ctx, t, dsn)
	own := make(chan struct{}, 64)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = send.ListenJobs(lctx, func() { own <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitWoken(t, own, "the store's own listener's start")
	waitListening(ctx, t, c.Node(0), prefix)
	other := listenOn(ctx, t, c, 1, prefix)
	for range 3 {
		require.NoError(t, send.NotifyJobs(ctx))
		waitWoken(t, other, "another process's listener on node2")
		waitListening(ctx, t, c.Node(1), prefix)
	}
	require.NoError(t, openWakeStore(ctx, t, c.Node(2).DSN("galera_wake", prefix)).NotifyJobs(ctx))
	waitWoken(t, own, "the store's listener, by another process's send through node3")
	waitListening(ctx, t, c.Node(0), prefix)
	require.Zero(t, len(own), "wake-ups of the store's listener by its own sends")
}

// downSends is the least number of sends the node-down subtests make
// while node3 is down.
const downSends = 10

// nodeBackoffMax is the longest a store leaves out a node whose read of
// the listeners failed (nodeRetryMax in store/mysql).
const nodeBackoffMax = 30 * time.Second

// wakeNodeDown takes node3 down with down, so that connections to it are
// refused, while send (through node1) sends, one send every 100 ms, until
// node3 was tried three times (at once, after 1 s and after 2 s more):
// each send wakes a listener on node2 (the first within first), and the
// sends that tried node3 failed no more often than the backoff allows.
// Then it restarts node3 and sends until a new listener through node3 is
// woken, within the longest backoff. It leaves the cluster's three nodes
// synced.
func wakeNodeDown(ctx context.Context, t *testing.T, c *galera.Cluster, send *mysql.Store, prefix string, down func(*galera.Node), first time.Duration) {
	t.Helper()
	woken2 := listenOn(ctx, t, c, 1, prefix)
	old3 := listenOn(ctx, t, c, 2, prefix)
	require.NoError(t, send.NotifyJobs(ctx)) // the store has learned the nodes
	waitWoken(t, woken2, "a listener on node2 before node3 goes down")
	waitWoken(t, old3, "a listener on node3 before it goes down")
	waitListening(ctx, t, c.Node(1), prefix)

	n3 := c.Node(2)
	down(n3)
	t.Cleanup(func() {
		if n3.Pid() == 0 { // the subtest failed before node3 was back
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := n3.Restart(rctx); err != nil {
				t.Errorf("restart %s: %v", n3.Name(), err)
			}
		}
	})
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond) // a commit every 100 ms
	defer tick.Stop()
	giveUp := time.After(time.Minute)
	sends, failed := 0, 0
	for failed < 3 || sends < downSends {
		select {
		case <-tick.C:
		case <-giveUp:
			t.Fatalf("node3 down: %d of %d sends over %s tried it; a node whose read failed is tried again after 1 s, then 2 s", failed, sends, time.Since(start).Round(time.Millisecond))
		}
		sends++
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second) // as the engine sends
		if err := send.NotifyJobs(sctx); err != nil {
			failed++ // node3's part
		}
		cancel()
		within := wokenWithin
		if sends == 1 {
			within = first
		}
		waitWokenWithin(t, woken2, within, fmt.Sprintf("a listener on node2, send %d while node3 is down", sends))
		waitListening(ctx, t, c.Node(1), prefix)
	}
	// A send that tries node3 fails at once (connection refused). After
	// a failure the store leaves node3 out for 1 s, then 2 s, 4 s...:
	// over elapsed, at most 1+log2(1+elapsed/1s) sends try it (one more
	// allowed for the time a failure takes to be recorded).
	elapsed := time.Since(start)
	allowed := 2 + int(math.Log2(1+elapsed.Seconds()))
	t.Logf("node3 down: %d sends over %s woke the listener on node2, %d tried node3 and failed", sends, elapsed.Round(time.Millisecond), failed)
	require.LessOrEqual(t, failed, allowed, "sends that tried node3 while it was down, over %s: the store leaves a node whose read failed out for a while", elapsed)

	require.NoError(t, n3.Restart(ctx), "restart %s", n3.Name())
	require.NoError(t, c.WaitSynced(ctx))
	woken3 := listenOn(ctx, t, c, 2, prefix)
	start = time.Now()
	deadline := time.After(nodeBackoffMax + wokenWithin)
	sends = 0
	for {
		select {
		case <-woken3:
			t.Logf("node3 back: a listener through it woken %s and %d sends later", time.Since(start).Round(time.Millisecond), sends)
			return
		case <-woken2: // woken by each send
		case <-old3: // reconnected, and woken by each send
		case <-tick.C:
			sends++
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = send.NotifyJobs(sctx) // node3's part fails until it is tried again
			cancel()
		case <-deadline:
			t.Fatalf("a listener through node3, back after being down: not woken by %d sends over %s", sends, time.Since(start).Round(time.Millisecond))
		}
	}
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
			"SELECT SLEEP(%) AS queuety_go_wake, '%."+prefix+"queuety\\_jobs' AS jobs\\_table%").Scan(&k)
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
	createWakeDatabase(ctx, t, c)
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

// createWakeDatabase creates the database galera_wake that the wake-up
// tests' stores use, through the cluster's first node.
func createWakeDatabase(ctx context.Context, t *testing.T, c *galera.Cluster) {
	t.Helper()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE galera_wake")
	require.NoError(t, err)
}
