//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// scaleOf reads a count from the environment, defaulting to def: the
// suite runs small in CI and larger on demand.
func scaleOf(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// conflicts sums, over the nodes, the transactions Galera aborted for a
// conflict: write sets that failed certification at COMMIT, and local
// transactions a replicated write aborted.
func conflicts(ctx context.Context, t *testing.T, c *galera.Cluster) (cert, bf int64) {
	t.Helper()
	return nodeConflicts(ctx, t, c.Nodes()...)
}

// nodeConflicts is conflicts summed over nodes.
func nodeConflicts(ctx context.Context, t *testing.T, nodes ...*galera.Node) (cert, bf int64) {
	t.Helper()
	for _, n := range nodes {
		db, err := sql.Open("mysql", n.DriverDSN(""))
		require.NoError(t, err)
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')")
		require.NoError(t, err)
		for rows.Next() {
			var name string
			var v int64
			require.NoError(t, rows.Scan(&name, &v))
			if strings.EqualFold(name, "wsrep_local_cert_failures") {
				cert += v
			} else {
				bf += v
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
		db.Close()
	}
	return cert, bf
}

// clients opens a client through every node, on database db (created on
// the first node) with table prefix prefix; the first client migrates.
func clients(ctx context.Context, t *testing.T, c *galera.Cluster, db, prefix string) []*queuety.Client {
	t.Helper()
	return clientsVia(ctx, t, c, db, func(i int) string { return c.Node(i).DSN(db, prefix) })
}

// clientsVia creates database db through the first node and opens a
// client for every node i on dsn(i); the first client migrates.
func clientsVia(ctx context.Context, t *testing.T, c *galera.Cluster, db string, dsn func(i int) string) []*queuety.Client {
	t.Helper()
	admin, err := sql.Open("mysql", c.Node(0).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+db)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var out []*queuety.Client
	for i, n := range c.Nodes() {
		q, err := queuety.Open(ctx, dsn(i), queuety.WithLogger(quiet))
		require.NoError(t, err, "open through %s", n.Name())
		t.Cleanup(func() { q.Close() })
		out = append(out, q)
	}
	return out
}

// runs counts the executions of each unit of work.
type runs struct {
	mu sync.Mutex
	n  map[string]int
	// done is closed once want distinct units ran.
	want int
	done chan struct{}
}

func newRuns(want int) *runs {
	return &runs{n: map[string]int{}, want: want, done: make(chan struct{})}
}

func (r *runs) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[key]++
	if r.n[key] == 1 && len(r.n) == r.want {
		close(r.done)
	}
}

// check fails the test unless every one of keys ran exactly once.
func (r *runs) check(t *testing.T, keys []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var lost, twice []string
	for _, k := range keys {
		switch r.n[k] {
		case 0:
			lost = append(lost, k)
		case 1:
		default:
			twice = append(twice, fmt.Sprintf("%s (%d runs)", k, r.n[k]))
		}
	}
	require.Empty(t, lost, "units never run")
	require.Empty(t, twice, "units run more than once")
	require.Len(t, r.n, len(keys), "units run that were never dispatched")
}

// startWorkers runs one worker through each client, with the handlers
// register adds, until the returned stop is called.
func startWorkers(t *testing.T, qs []*queuety.Client, concurrency int, register func(*worker.Worker), opts ...worker.Option) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, q := range qs {
		w := worker.New(q, append([]worker.Option{worker.Concurrency(concurrency), worker.PollInterval(50 * time.Millisecond), worker.WithLogger(quiet)}, opts...)...)
		register(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker through node%d: %v", i+1, err)
			}
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestGalera runs the engine on a three-node cluster with a worker
// through each node.
func TestGalera(t *testing.T) {
	c := galera.Start(t)
	t.Run("Drain", func(t *testing.T) { testDrain(t, c) })
	t.Run("Workflows", func(t *testing.T) { testWorkflows(t, c) })
	t.Run("CertificationFailure", func(t *testing.T) { testCertificationFailure(t, c) })
	t.Run("NodeNotReady", func(t *testing.T) { testNodeNotReady(t, c) })
	t.Run("Expiring", func(t *testing.T) { testExpiring(t, c) })
	t.Run("Schedules", func(t *testing.T) { testSchedules(t, c) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, c) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, c) })
	t.Run("StopNode", func(t *testing.T) { testStopNode(t, c) })
	t.Run("KillNode", func(t *testing.T) { testKillNode(t, c) })
	t.Run("Failover", func(t *testing.T) { testFailover(t, c) })
}

// testDrain: N jobs dispatched through the three nodes, drained by a
// worker through each: every job runs exactly once and ends completed,
// whatever certification failures the claims and completions met.
func testDrain(t *testing.T, c *galera.Cluster) {
	n := scaleOf("QUEUETY_GALERA_JOBS", 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_drain", "gd_")

	keys := make([]string, n)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	for start := 0; start < n; start += 500 {
		var reqs []queuety.JobRequest
		for i := start; i < min(n, start+500); i++ {
			reqs = append(reqs, queuety.JobRequest{Handler: "count", Payload: map[string]any{"i": i}})
		}
		_, err := qs[(start/500)%len(qs)].DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}

	cert0, bf0 := conflicts(ctx, t, c)
	r := newRuns(n)
	t0 := time.Now()
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
			i, ok := p.Int("i")
			if !ok {
				return fmt.Errorf("payload without i: %v", p)
			}
			r.add(strconv.FormatInt(i, 10))
			return nil
		})
	})
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("drain did not finish: %d of %d jobs ran", len(r.n), n)
	}
	waitNoOpenJobs(ctx, t, qs[0])
	elapsed := time.Since(t0)
	stop()
	cert, bf := conflicts(ctx, t, c)
	r.check(t, keys)
	t.Logf("drained %d jobs through 3 nodes in %s (%.0f jobs/s); certification failures %d, brute-force aborts %d",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), cert-cert0, bf-bf0)
}

// waitNoOpenJobs waits until no job is pending or processing: every
// completion has committed.
func waitNoOpenJobs(ctx context.Context, t *testing.T, q *queuety.Client) {
	t.Helper()
	for {
		counts, err := q.Counts(ctx)
		require.NoError(t, err)
		open := int64(0)
		for _, qc := range counts {
			if qc.Status == queuetytype.JobPending || qc.Status == queuetytype.JobProcessing {
				open += qc.Count
			}
		}
		if open == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d jobs still open", open)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// testWorkflows: three-step workflows dispatched through the three nodes
// and run by a worker through each, so consecutive steps of one workflow
// often run on different nodes: every step runs exactly once, and every
// workflow completes with the state all three steps wrote.
func testWorkflows(t *testing.T, c *galera.Cluster) {
	n := scaleOf("QUEUETY_GALERA_WORKFLOWS", 300)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_workflows", "gw_")

	def := queuety.WorkflowDefinition{Name: "three", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s1"},
		{Type: queuetytype.StepSingle, Handler: "s2"},
		{Type: queuetytype.StepSingle, Handler: "s3"},
	}}
	var keys []string
	ids := make([]int64, n)
	for i := range n {
		id, err := qs[i%len(qs)].DispatchWorkflow(ctx, def, queuety.State{"k": i})
		require.NoError(t, err)
		ids[i] = id
		for s := 1; s <= 3; s++ {
			keys = append(keys, fmt.Sprintf("%d/s%d", i, s))
		}
	}

	cert0, bf0 := conflicts(ctx, t, c)
	r := newRuns(3 * n)
	t0 := time.Now()
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		for s := 1; s <= 3; s++ {
			name := "s" + strconv.Itoa(s)
			w.HandleStep(name, func(_ context.Context, st queuety.State) (queuety.State, error) {
				k, ok := st.Int("k")
				if !ok {
					return nil, fmt.Errorf("state without k: %v", st)
				}
				r.add(fmt.Sprintf("%d/%s", k, name))
				return queuety.State{name: true}, nil
			})
		}
	})
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("workflows did not finish: %d of %d steps ran", len(r.n), 3*n)
	}
	for {
		counts, err := qs[0].WorkflowCounts(ctx)
		require.NoError(t, err)
		if counts[queuetytype.WorkflowCompleted] == int64(n) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workflows not all completed: %v", counts)
		case <-time.After(50 * time.Millisecond):
		}
	}
	elapsed := time.Since(t0)
	stop()
	cert, bf := conflicts(ctx, t, c)
	r.check(t, keys)
	for i, id := range ids {
		wf, err := qs[i%len(qs)].Workflow(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
	}
	t.Logf("ran %d three-step workflows through 3 nodes in %s (%.0f steps/s); certification failures %d, brute-force aborts %d",
		n, elapsed.Round(time.Millisecond), float64(3*n)/elapsed.Seconds(), cert-cert0, bf-bf0)
}

// testNodeNotReady: a node that refuses statements mid-transaction with
// error 1047 ("WSREP has not yet prepared node for application use", here
// through wsrep_reject_queries, as a node outside the primary component
// answers) has the transaction run again from its start, not failed.
func testNodeNotReady(t *testing.T, c *galera.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_notready", "gn_")
	q := qs[2]
	id, err := q.Dispatch(ctx, "a", nil)
	require.NoError(t, err)
	admin, err := sql.Open("mysql", c.Node(2).DriverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	adminConn, err := admin.Conn(ctx) // open before the node refuses new work
	require.NoError(t, err)
	defer adminConn.Close()
	defer adminConn.ExecContext(context.Background(), "SET GLOBAL wsrep_reject_queries = NONE")

	attempts := 0
	var refused error
	err = clientseam.StoreOf(q).InTx(ctx, func(tx driver.Tx) error {
		attempts++
		if _, err := tx.JobGet(ctx, id, driver.LockUpdate); err != nil {
			return err
		}
		if attempts > 1 {
			return nil
		}
		_, err := adminConn.ExecContext(ctx, "SET GLOBAL wsrep_reject_queries = ALL")
		require.NoError(t, err)
		_, refused = tx.JobGet(ctx, id, driver.LockUpdate)
		_, err = adminConn.ExecContext(ctx, "SET GLOBAL wsrep_reject_queries = NONE")
		require.NoError(t, err)
		return refused
	})
	require.Error(t, refused, "the node answered while refusing queries")
	require.Contains(t, refused.Error(), "1047")
	require.NoError(t, err, "transaction failed instead of being run again")
	require.Equal(t, 2, attempts, "transaction attempts")
}

// testCertificationFailure: two transactions through two nodes update
// the same job; the one through node2 has written but not committed when
// the one through node1 commits, so Galera refuses node2's COMMIT (a
// certification failure or a brute-force abort, error 1213 at COMMIT,
// where a single server would have made it wait on the row lock). The
// store runs it again from its start, and both updates hold.
func testCertificationFailure(t *testing.T, c *galera.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_cert", "gc_")
	id, err := qs[0].Dispatch(ctx, "a", nil)
	require.NoError(t, err)
	bump := func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		j.Priority++
		return tx.JobUpdate(ctx, j)
	}
	// The job must be on node2 before it is read there.
	for {
		if _, err := qs[1].Job(ctx, id); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the job never reached node2")
		case <-time.After(20 * time.Millisecond):
		}
	}

	attempts := 0
	err = clientseam.StoreOf(qs[1]).InTx(ctx, func(tx driver.Tx) error {
		attempts++
		if err := bump(tx); err != nil {
			return err
		}
		if attempts == 1 { // node1 commits its write first
			require.NoError(t, clientseam.StoreOf(qs[0]).InTx(ctx, bump))
		}
		return nil
	})
	require.NoError(t, err, "transaction failed instead of being run again")
	require.GreaterOrEqual(t, attempts, 2, "node2's COMMIT was not refused")
	for {
		j, err := qs[0].Job(ctx, id)
		require.NoError(t, err)
		if j.Priority == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("priority %d, want 2: an update was lost", j.Priority)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("node2's transaction ran %d times", attempts)
}
