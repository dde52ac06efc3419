//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// testFailover: a client whose DSN names every node connects to a
// synced one and moves to another when its node desyncs, refuses
// queries, or dies.
func testFailover(t *testing.T, c *galera.Cluster) {
	t.Run("Desync", func(t *testing.T) { testFailoverDesync(t, c) })
	t.Run("RejectQueries", func(t *testing.T) { testFailoverRejectQueries(t, c) })
	t.Run("NodeKilled", func(t *testing.T) { testFailoverNodeKilled(t, c) })
}

// failoverDSN is a DSN naming every node, the node of index first first
// and the others after it in the cluster's order.
func failoverDSN(c *galera.Cluster, first int, db, prefix string) string {
	hosts := []string{"127.0.0.1:" + strconv.Itoa(c.Node(first).Port)}
	for i, n := range c.Nodes() {
		if i != first {
			hosts = append(hosts, "127.0.0.1:"+strconv.Itoa(n.Port))
		}
	}
	return "mysql://root@" + strings.Join(hosts, ",") + "/" + db + "?prefix=" + prefix
}

// openFailover creates database db through node1 and opens a client on
// a DSN naming every node with the node of index first first.
func openFailover(ctx context.Context, t *testing.T, c *galera.Cluster, first int, db, prefix string) *queuety.Client {
	t.Helper()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+db)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, err := queuety.Open(ctx, failoverDSN(c, first, db, prefix), queuety.WithLogger(quiet))
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })
	return q
}

// nodeOf returns the index of the node a connection of q's pool is on.
func nodeOf(ctx context.Context, t *testing.T, c *galera.Cluster, q *queuety.Client) int {
	t.Helper()
	var port int
	require.NoError(t, clientseam.StoreOf(q).(*mysql.Store).DB.QueryRowContext(ctx, "SELECT @@port").Scan(&port))
	for i, n := range c.Nodes() {
		if n.Port == port {
			return i
		}
	}
	t.Fatalf("port %d is no node's", port)
	return -1
}

// waitOff waits until no connection of q's pool is on node i: with
// nothing else using the pool, it runs as many statements at once as the
// pool has connections, so that every idle connection is handed out (and
// checked as the pool checks it), until all of them succeed on other
// nodes. It runs no more than that: more would open connections to other
// nodes until the idle limit closed the old ones, whatever the check.
func waitOff(ctx context.Context, t *testing.T, c *galera.Cluster, q *queuety.Client, i int) {
	t.Helper()
	db := clientseam.StoreOf(q).(*mysql.Store).DB
	for {
		n := max(db.Stats().OpenConnections, 1)
		ports := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var port, slept int
				if err := db.QueryRowContext(ctx, "SELECT @@port, SLEEP(0.2)").Scan(&port, &slept); err != nil {
					port = -1 // a refused statement: its connection is given up
				}
				ports <- port
			}()
		}
		wg.Wait()
		close(ports)
		clean := true
		for p := range ports {
			if p == -1 || p == c.Node(i).Port {
				clean = false
			}
		}
		if clean {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pool still hands out connections to node%d", i+1)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// testFailoverDesync: a node that leaves the synced state (here
// wsrep_desync, as a backup does; wsrep_local_state 2) is skipped by a
// new client, a client on it keeps running jobs, and its pooled
// connections to the node are given up when next handed out.
func testFailoverDesync(t *testing.T, c *galera.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := openFailover(ctx, t, c, 2, "galera_desync", "fd_")
	require.Equal(t, 2, nodeOf(ctx, t, c, q), "the client starts on the first node of its DSN")

	admin, err := sql.Open("mysql", c.Node(2).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "SET GLOBAL wsrep_desync = ON")
	require.NoError(t, err)
	defer func() {
		_, _ = admin.ExecContext(context.Background(), "SET GLOBAL wsrep_desync = OFF")
		require.NoError(t, c.Node(2).WaitSynced(context.Background(), galera.Size))
	}()
	for {
		st, err := c.Node(2).Status(ctx)
		require.NoError(t, err)
		if st.LocalState != 4 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("node3 never left the synced state")
		case <-time.After(20 * time.Millisecond):
		}
	}

	fresh := openFailover(ctx, t, c, 2, "galera_desync", "fd_")
	require.Equal(t, 0, nodeOf(ctx, t, c, fresh), "a new client skips the desynced node")

	r := newRuns(50)
	stop := startWorkers(t, []*queuety.Client{q}, 4, func(w *worker.Worker) {
		w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
			i, _ := p.Int("i")
			r.add(strconv.FormatInt(i, 10))
			return nil
		})
	})
	defer stop()
	var keys []string
	for i := range 50 {
		_, err := q.Dispatch(ctx, "count", map[string]any{"i": i})
		require.NoError(t, err)
		keys = append(keys, strconv.Itoa(i))
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatal("jobs did not run")
	}
	stop()
	r.check(t, keys)
	waitOff(ctx, t, c, q, 2)
}

// testFailoverRejectQueries: a node that refuses queries with error 1047
// (wsrep_reject_queries, as a node outside the primary component
// answers) under a client with pooled connections to it: the client's
// next operations succeed through another node, its connections to the
// refusing node given up.
func testFailoverRejectQueries(t *testing.T, c *galera.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q := openFailover(ctx, t, c, 2, "galera_reject", "fr_")
	for i := range 10 { // a few pooled connections, all on node3
		_, err := q.Dispatch(ctx, "h", map[string]any{"i": i})
		require.NoError(t, err)
	}
	require.Equal(t, 2, nodeOf(ctx, t, c, q))

	admin, err := sql.Open("mysql", c.Node(2).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	adminConn, err := admin.Conn(ctx) // open before the node refuses new work
	require.NoError(t, err)
	defer adminConn.Close()
	_, err = adminConn.ExecContext(ctx, "SET GLOBAL wsrep_reject_queries = ALL")
	require.NoError(t, err)
	defer adminConn.ExecContext(context.Background(), "SET GLOBAL wsrep_reject_queries = NONE")

	for i := range 20 {
		_, err := q.Dispatch(ctx, "h", map[string]any{"after": i})
		require.NoError(t, err, "dispatch %d while node3 refuses queries", i)
	}
	waitOff(ctx, t, c, q, 2)
	fresh := openFailover(ctx, t, c, 2, "galera_reject", "fr_")
	require.Equal(t, 0, nodeOf(ctx, t, c, fresh), "a new client skips the refusing node")
}

// testFailoverNodeKilled: a worker whose DSN names every node, its own
// node first, drains a stream of jobs while the node it is connected to
// is SIGKILLed, QUEUETY_FAILOVER_KILLS times (default 1; the node is
// restarted after each, and the next kill takes the node the worker
// moved to). The worker carries on through another node without a
// restart, and no job whose dispatch returned is lost. It logs, for each
// kill, the time from the SIGKILL to the first job both claimed and
// completed after it.
func testFailoverNodeKilled(t *testing.T, c *galera.Cluster) {
	kills := scaleOf("QUEUETY_FAILOVER_KILLS", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(3+2*kills)*time.Minute)
	defer cancel()
	wq := openFailover(ctx, t, c, 2, "galera_fkill", "fk_")
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN("galera_fkill"))
	require.NoError(t, err)
	_, err = admin.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS fk_probe (id BIGINT AUTO_INCREMENT PRIMARY KEY)")
	admin.Close()
	require.NoError(t, err)
	pq := openFailover(ctx, t, c, 0, "galera_fkill", "fk_")
	require.Equal(t, 2, nodeOf(ctx, t, c, wq), "the worker starts on its own node")

	var mu sync.Mutex
	var (
		runs     = map[int64]int{}
		started  = map[int64]time.Time{} // job id -> first handler start
		done     int
		killedAt time.Time
		measured []time.Duration
		recovery = make(chan struct{}, 1)
	)
	finished := func(job *queuetytype.Job, err error) {
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		if !killedAt.IsZero() && started[job.ID].After(killedAt) {
			measured = append(measured, time.Since(killedAt))
			killedAt = time.Time{}
			recovery <- struct{}{}
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := worker.New(wq, worker.Concurrency(4), worker.PollInterval(20*time.Millisecond),
		worker.WithLogger(quiet), worker.WithHooks(worker.Hooks{Finished: finished}))
	w.HandleJob("count", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		runs[info.JobID]++
		if _, ok := started[info.JobID]; !ok {
			started[info.JobID] = time.Now()
		}
		return nil
	})
	wctx, wcancel := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() {
		defer wwg.Done()
		if err := w.Run(wctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	defer func() { wcancel(); wwg.Wait() }()

	// A producer through a client of its own dispatches a job every few
	// milliseconds; a dispatch that returned an error is not counted (its
	// outcome may be unknown when the node died under its COMMIT).
	var dispatched []int64
	unknown := 0
	pctx, pcancel := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for pctx.Err() == nil {
			id, err := pq.Dispatch(pctx, "count", nil)
			mu.Lock()
			if err == nil {
				dispatched = append(dispatched, id)
			} else if pctx.Err() == nil {
				unknown++
			}
			mu.Unlock()
			select {
			case <-pctx.Done():
			case <-time.After(3 * time.Millisecond):
			}
		}
	}()
	defer func() { pcancel(); pwg.Wait() }()

	waitDone := func(n int) {
		t.Helper()
		for {
			mu.Lock()
			d := done
			mu.Unlock()
			if d >= n {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%d jobs completed, want %d", d, n)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for k := range kills {
		mu.Lock()
		base := done
		mu.Unlock()
		waitDone(base + 200)
		vi := nodeOf(ctx, t, c, wq)
		victim := c.Node(vi)
		probe, err := sql.Open("mysql", c.Node((vi+1)%galera.Size).DriverDSN("galera_fkill"))
		require.NoError(t, err)
		require.NoError(t, probe.PingContext(ctx))
		mu.Lock()
		killedAt = time.Now()
		t0 := killedAt
		mu.Unlock()
		victim.Kill()
		clusterBack := writesResume(ctx, t, probe, t0)
		probe.Close()
		select {
		case <-recovery:
		case <-ctx.Done():
			t.Fatalf("kill %d: no job completed after %s was killed", k+1, victim.Name())
		}
		mu.Lock()
		t.Logf("kill %d: %s SIGKILLed; a write through a surviving node committed after %s; the worker's first job claimed and completed after the kill, after %s",
			k+1, victim.Name(), clusterBack.Round(time.Millisecond), measured[len(measured)-1].Round(time.Millisecond))
		mu.Unlock()
		require.NoError(t, victim.Restart(ctx), "restart %s", victim.Name())
	}
	pcancel()
	pwg.Wait()

	// Every dispatched job completes: a claim whose COMMIT died with the
	// node is recovered once its lease expires.
	waitNoOpenJobs(ctx, t, pq)
	wcancel()
	wwg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var lost []int64
	twice := 0
	for _, id := range dispatched {
		switch runs[id] {
		case 0:
			lost = append(lost, id)
		case 1:
		default:
			twice++
		}
	}
	require.Empty(t, lost, "dispatched jobs never run")
	sorted := slices.Clone(measured)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%d jobs dispatched (%d dispatches failed while a node died), %d ran, %d ran again after a crash; "+
		"SIGKILL to the next job completed through another node: %v (median %s)",
		len(dispatched), unknown, len(runs), twice, fmt.Sprint(measured), sorted[len(sorted)/2].Round(time.Millisecond))
}

// writesResume returns how long after t0 a write through db (a node that
// survived a kill) commits: the time the cluster takes to evict the dead
// node, during which no node commits.
func writesResume(ctx context.Context, t *testing.T, db *sql.DB, t0 time.Time) time.Duration {
	t.Helper()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := db.ExecContext(actx, "INSERT INTO fk_probe () VALUES ()")
		cancel()
		if err == nil {
			return time.Since(t0)
		}
		if ctx.Err() != nil {
			t.Fatalf("no write committed after the kill: %v", err)
		}
	}
}
