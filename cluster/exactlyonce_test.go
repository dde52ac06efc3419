//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// fastMaintenance makes every worker sweep deadlines and tick schedules
// several times a second, so the three nodes' workers race for the same
// rows.
func fastMaintenance() worker.Option {
	return worker.Maintenance(worker.Intervals{Deadlines: 100 * time.Millisecond, ScheduleIdle: 100 * time.Millisecond})
}

// syncedDB opens node's database db for the test's own checks, every
// read of it waiting until the node applied every write the cluster
// committed before it (wsrep_sync_wait = 1): a check must not pass or
// fail on a stale read.
func syncedDB(t *testing.T, n *galera.Node, db string) *sql.DB {
	t.Helper()
	dsn := n.DriverDSN(db)
	if strings.Contains(dsn, "?") {
		dsn += "&wsrep_sync_wait=1"
	} else {
		dsn += "?wsrep_sync_wait=1"
	}
	d, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// count runs a COUNT query.
func count(ctx context.Context, t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&n), q)
	return n
}

// waitUntil polls cond every 50 ms until it holds (true) or ctx ends
// (false).
func waitUntil(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// waitFor polls cond every 50 ms until it holds, failing the test with
// what when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// testExpiring: workflows whose only step no worker runs pass their
// deadline while the workers through all three nodes sweep deadlines
// several times a second: every workflow fails at its deadline once, one
// deadline callback job is enqueued for it, and its handler runs once.
func testExpiring(t *testing.T, c *galera.Cluster) {
	n := scaleOf("QUEUETY_GALERA_EXPIRING", 300)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_expiring", "ge_")
	db := syncedDB(t, c.Node(0), "galera_expiring")

	keys := make([]string, n)
	for i := range n {
		keys[i] = strconv.Itoa(i)
		_, err := builder.Workflow("doomed").Then("never").MustCompleteWithin(0, 0, 0, 1).OnDeadline("on_deadline").
			Dispatch(ctx, qs[i%len(qs)], queuety.State{"key": keys[i]})
		require.NoError(t, err)
	}
	cert0, bf0 := conflicts(ctx, t, c)
	r := newRuns(n)
	t0 := time.Now()
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		w.HandleDeadline("on_deadline", func(_ context.Context, st queuety.State) error {
			r.add(st.String("key"))
			return nil
		})
	}, fastMaintenance())
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("deadline handlers did not all run: %d of %d", len(r.n), n)
	}
	waitFor(ctx, t, "deadline callback jobs still open", func() bool {
		return count(ctx, t, db, "SELECT COUNT(*) FROM ge_queuety_jobs WHERE handler = 'on_deadline' AND status IN ('pending', 'processing')") == 0
	})
	elapsed := time.Since(t0)
	stop()
	cert, bf := conflicts(ctx, t, c)
	r.check(t, keys)
	require.Equal(t, n, count(ctx, t, db, "SELECT COUNT(*) FROM ge_queuety_jobs WHERE handler = 'on_deadline'"), "deadline callback jobs enqueued")
	require.Equal(t, n, count(ctx, t, db, "SELECT COUNT(*) FROM ge_queuety_workflows WHERE status = 'failed'"), "workflows failed at their deadline")
	t.Logf("%d workflows expired by the sweeps of 3 nodes, each deadline handler once, in %s; certification failures %d, brute-force aborts %d",
		n, elapsed.Round(time.Millisecond), cert-cert0, bf-bf0)
}

// testSchedules: schedules firing every second (catching up every slot)
// ticked by the workers through all three nodes: each slot between a
// schedule's first next run and its last fires exactly one job, and each
// job runs once.
func testSchedules(t *testing.T, c *galera.Cluster) {
	const schedules = 4
	slots := scaleOf("QUEUETY_GALERA_SLOTS", 6)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_schedules", "gs_")
	db := syncedDB(t, c.Node(0), "galera_schedules")

	ids := make([]int64, schedules)
	first := make([]time.Time, schedules)
	for i := range schedules {
		id, err := qs[i%len(qs)].Schedule("tick"+strconv.Itoa(i), queuety.State{"s": i}).Every(time.Second).
			CatchUp(queuetytype.CatchUpAll).Save(ctx)
		require.NoError(t, err)
		s, err := qs[i%len(qs)].ScheduleByID(ctx, id)
		require.NoError(t, err)
		ids[i], first[i] = id, s.NextRun
	}
	var mu sync.Mutex
	jobRuns := map[int64]int{}
	perSchedule := make([]int, schedules)
	cert0, bf0 := conflicts(ctx, t, c)
	stop := startWorkers(t, qs, 4, func(w *worker.Worker) {
		for i := range schedules {
			w.HandleJob("tick"+strconv.Itoa(i), func(ctx context.Context, _ queuety.Payload) error {
				info, _ := queuety.JobInfoFrom(ctx)
				mu.Lock()
				defer mu.Unlock()
				jobRuns[info.JobID]++
				if jobRuns[info.JobID] == 1 {
					perSchedule[i]++
				}
				return nil
			})
		}
	}, fastMaintenance())
	waitFor(ctx, t, "schedules did not fire enough slots", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Min(perSchedule) >= slots
	})
	stop()
	cert, bf := conflicts(ctx, t, c)
	// Every job fired must have run once; the last firings may still be
	// pending, so run them through one worker with no maintenance.
	drain := worker.New(qs[0], worker.Concurrency(4), worker.PollInterval(20*time.Millisecond), worker.NoMaintenance())
	for i := range schedules {
		drain.HandleJob("tick"+strconv.Itoa(i), func(ctx context.Context, _ queuety.Payload) error {
			info, _ := queuety.JobInfoFrom(ctx)
			mu.Lock()
			defer mu.Unlock()
			jobRuns[info.JobID]++
			return nil
		})
	}
	runUntil(ctx, t, drain, db, "SELECT COUNT(*) FROM gs_queuety_jobs WHERE status IN ('pending', 'processing')")

	total := 0
	for i, id := range ids {
		var next time.Time
		require.NoError(t, db.QueryRowContext(ctx, "SELECT next_run FROM gs_queuety_schedules WHERE id = ?", id).Scan(&next))
		want := int(next.Sub(first[i]) / time.Second)
		got := count(ctx, t, db, "SELECT COUNT(*) FROM gs_queuety_jobs WHERE handler = ?", "tick"+strconv.Itoa(i))
		require.Equal(t, want, got, "schedule %d: jobs fired for the %d slots from %s to %s", id, want, first[i], next)
		total += got
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, jobRuns, total, "fired jobs that ran")
	for id, runs := range jobRuns {
		require.Equal(t, 1, runs, "job %d runs", id)
	}
	t.Logf("%d schedules ticked from 3 nodes fired %d slots, each once; certification failures %d, brute-force aborts %d",
		schedules, total, cert-cert0, bf-bf0)
}

// testBatches: batches of three jobs dispatched through the three nodes,
// their jobs completed by workers through all three (so the batch's
// counters are written from several nodes at once): each batch's then
// callback runs exactly once.
func testBatches(t *testing.T, c *galera.Cluster) {
	n := scaleOf("QUEUETY_GALERA_BATCHES", 150)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_batches", "gb_")
	db := syncedDB(t, c.Node(0), "galera_batches")

	keys := make([]string, 0, n)
	for i := range n {
		var reqs []queuety.JobRequest
		for j := range 3 {
			reqs = append(reqs, queuety.JobRequest{Handler: "part", Payload: queuety.State{"b": i, "j": j}})
		}
		id, err := qs[i%len(qs)].NewBatch(reqs...).Then("then_cb").Dispatch(ctx)
		require.NoError(t, err)
		keys = append(keys, strconv.FormatInt(id, 10))
	}
	parts := newRuns(3 * n)
	r := newRuns(n)
	cert0, bf0 := conflicts(ctx, t, c)
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		w.HandleJob("part", func(ctx context.Context, p queuety.Payload) error {
			b, _ := p.Int("b")
			j, _ := p.Int("j")
			parts.add(fmt.Sprintf("%d/%d", b, j))
			return nil
		})
		w.HandleBatchCallback("then_cb", func(_ context.Context, b *queuety.Batch) error {
			r.add(strconv.FormatInt(b.ID, 10))
			return nil
		})
	})
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("batch callbacks did not all run: %d of %d", len(r.n), n)
	}
	waitFor(ctx, t, "jobs still open", func() bool {
		return count(ctx, t, db, "SELECT COUNT(*) FROM gb_queuety_jobs WHERE status IN ('pending', 'processing')") == 0
	})
	stop()
	cert, bf := conflicts(ctx, t, c)
	r.check(t, keys)
	var partKeys []string
	for i := range n {
		for j := range 3 {
			partKeys = append(partKeys, fmt.Sprintf("%d/%d", i, j))
		}
	}
	parts.check(t, partKeys)
	require.Equal(t, n, count(ctx, t, db, "SELECT COUNT(*) FROM gb_queuety_batches WHERE finished_at IS NOT NULL"), "batches finished")
	t.Logf("%d batches over 3 nodes, each then callback once; certification failures %d, brute-force aborts %d", n, cert-cert0, bf-bf0)
}

// testLimits: jobs of one concurrency group with a limit, and jobs of a
// rate-limited handler, claimed by workers through all three nodes: never
// more of the group in flight than its limit, never more starts of the
// handler in a window than its rate.
func testLimits(t *testing.T, c *galera.Cluster) {
	const limit, rate = 3, 8
	n := scaleOf("QUEUETY_GALERA_LIMITED", 240)
	rated := 3 * rate
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_limits", "gl_")

	for start := 0; start < n; start += 100 {
		var reqs []queuety.JobRequest
		for i := start; i < min(n, start+100); i++ {
			reqs = append(reqs, queuety.JobRequest{Handler: "grouped", Payload: queuety.State{"i": i},
				Options: []queuety.JobOption{queuety.ConcurrencyGroup("g"), queuety.ConcurrencyLimit(limit)}})
		}
		_, err := qs[(start/100)%len(qs)].DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}
	for i := range rated {
		_, err := qs[i%len(qs)].Dispatch(ctx, "rated", queuety.State{"i": i}, queuety.RateLimit(rate, time.Second))
		require.NoError(t, err)
	}
	var inFlight, peak atomic.Int64
	grouped := newRuns(n)
	var mu sync.Mutex
	var starts []time.Time
	ratedRuns := newRuns(rated)
	cert0, bf0 := conflicts(ctx, t, c)
	stop := startWorkers(t, qs, 8, func(w *worker.Worker) {
		w.HandleJob("grouped", func(_ context.Context, p queuety.Payload) error {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			i, _ := p.Int("i")
			grouped.add(strconv.FormatInt(i, 10))
			return nil
		})
		w.HandleJob("rated", func(_ context.Context, p queuety.Payload) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			i, _ := p.Int("i")
			ratedRuns.add(strconv.FormatInt(i, 10))
			return nil
		})
		// A worker that only learns the limit from the first job it
		// claims may start a claim's worth before it knows: configure it.
	}, worker.RateLimit("rated", rate, time.Second))
	for _, r := range []*runs{grouped, ratedRuns} {
		select {
		case <-r.done:
		case <-ctx.Done():
			t.Fatalf("limited jobs did not all run: %d grouped of %d, %d rated of %d", len(grouped.n), n, len(ratedRuns.n), rated)
		}
	}
	stop()
	cert, bf := conflicts(ctx, t, c)
	keys := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(i)
		}
		return out
	}
	grouped.check(t, keys(n))
	ratedRuns.check(t, keys(rated))
	require.LessOrEqual(t, peak.Load(), int64(limit), "jobs of the group in flight at once")
	// The limiter counts starts when claims commit; the handlers start a
	// little later, each by its own delay, so the windows checked here
	// are 150 ms short of the limiter's second.
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	worst := 0
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second-150*time.Millisecond {
			j++
		}
		worst = max(worst, j-i)
	}
	require.LessOrEqual(t, worst, rate, "starts of the rated handler within one window")
	t.Logf("concurrency group of limit %d: peak %d in flight over %d jobs; rate %d/s: at most %d starts in a window over %d jobs; certification failures %d, brute-force aborts %d",
		limit, peak.Load(), n, rate, worst, rated, cert-cert0, bf-bf0)
}

// runUntil runs w until query, a count read through db, reads 0, and
// stops it: the last jobs a test's workers left open run to the end.
func runUntil(ctx context.Context, t *testing.T, w *worker.Worker, db *sql.DB, query string) {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	waitFor(ctx, t, "jobs still open", func() bool { return count(ctx, t, db, query) == 0 })
	cancel()
	require.NoError(t, <-done)
}
