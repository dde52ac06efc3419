//go:build galera

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb/galera"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// execution is one run of a unit of work: through which node's worker,
// and when it started.
type execution struct {
	node int
	at   time.Time
}

// ledger records every execution of every unit of work of a mixed load,
// so that a unit run twice can be told apart: re-run after the node its
// first run went through died (its completion lost with the node), or
// run twice without a crash (a bug).
type ledger struct {
	mu   sync.Mutex
	runs map[string][]execution
	// byNode counts the executions through each node after since.
	since  time.Time
	byNode [galera.Size]int
	// ticks counts the runs of each job a schedule fired.
	ticks map[int64]int
}

func newLedger() *ledger { return &ledger{runs: map[string][]execution{}, ticks: map[int64]int{}} }

// tick records a run of the schedule's job jobID.
func (l *ledger) tick(jobID int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ticks[jobID]++
}

// tickRuns returns how many fired jobs ran and how many ran more than once.
func (l *ledger) tickRuns() (ran, again int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.ticks {
		if n > 1 {
			again++
		}
	}
	return len(l.ticks), again
}

func (l *ledger) add(unit string, node int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.runs[unit] = append(l.runs[unit], execution{node: node, at: now})
	if !l.since.IsZero() && now.After(l.since) {
		l.byNode[node]++
	}
}

// distinct is the number of units run at least once.
func (l *ledger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

// countFrom starts counting executions per node from now on, and
// returns the counts since the previous call.
func (l *ledger) countFrom() [galera.Size]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.byNode
	l.byNode = [galera.Size]int{}
	l.since = time.Now()
	return out
}

// verdict sorts units: lost (never run), rerun (run again after a run
// through crashed, the node killed at killedAt, that started before the
// node was back at backAt), twice (run more than once otherwise).
func (l *ledger) verdict(units []string, crashed int, killedAt, backAt time.Time) (lost, rerun, twice []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range units {
		rs := l.runs[u]
		switch {
		case len(rs) == 0:
			lost = append(lost, u)
		case len(rs) > 1:
			excused := true
			for _, r := range rs[:len(rs)-1] {
				if r.node != crashed || r.at.After(backAt) || killedAt.IsZero() {
					excused = false
				}
			}
			if excused {
				rerun = append(rerun, u)
			} else {
				twice = append(twice, fmt.Sprintf("%s (%d runs: %v)", u, len(rs), rs))
			}
		}
	}
	return lost, rerun, twice
}

// mixedLoad dispatches, through the three nodes, jobs, three-step
// workflows and workflows that expire after deadline (their only step is
// one no worker runs), and returns the units of work they make.
func mixedLoad(ctx context.Context, t *testing.T, qs []*queuety.Client, jobs, workflows, expiring int, deadline time.Duration) []string {
	t.Helper()
	var units []string
	for start := 0; start < jobs; start += 500 {
		var reqs []queuety.JobRequest
		for i := start; i < min(jobs, start+500); i++ {
			reqs = append(reqs, queuety.JobRequest{Handler: "count", Payload: map[string]any{"i": i}})
			units = append(units, "job:"+strconv.Itoa(i))
		}
		_, err := qs[(start/500)%len(qs)].DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}
	def := queuety.WorkflowDefinition{Name: "three", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s1"},
		{Type: queuetytype.StepSingle, Handler: "s2"},
		{Type: queuetytype.StepSingle, Handler: "s3"},
	}}
	for i := range workflows {
		_, err := qs[i%len(qs)].DispatchWorkflow(ctx, def, queuety.State{"k": i})
		require.NoError(t, err)
		for s := 1; s <= 3; s++ {
			units = append(units, fmt.Sprintf("wf:%d/s%d", i, s))
		}
	}
	secs := max(1, int(deadline/time.Second))
	for i := range expiring {
		key := strconv.Itoa(i)
		_, err := builder.Workflow("doomed").Then("never").MustCompleteWithin(0, 0, 0, secs).OnDeadline("on_deadline").
			Dispatch(ctx, qs[i%len(qs)], queuety.State{"key": key})
		require.NoError(t, err)
		units = append(units, "dl:"+key)
	}
	return units
}

// startLoadWorkers runs a worker through each node with the handlers of
// mixedLoad, recording every execution in l.
func startLoadWorkers(t *testing.T, qs []*queuety.Client, l *ledger) (stop func()) {
	t.Helper()
	workers := make([]*queuety.Client, len(qs))
	copy(workers, qs)
	var stops []func()
	for node, q := range workers {
		stops = append(stops, startWorkers(t, []*queuety.Client{q}, 8, func(w *worker.Worker) {
			w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
				i, _ := p.Int("i")
				l.add("job:"+strconv.FormatInt(i, 10), node)
				return nil
			})
			for s := 1; s <= 3; s++ {
				name := "s" + strconv.Itoa(s)
				w.HandleStep(name, func(_ context.Context, st queuety.State) (queuety.State, error) {
					k, _ := st.Int("k")
					l.add(fmt.Sprintf("wf:%d/%s", k, name), node)
					return queuety.State{name: true}, nil
				})
			}
			w.HandleDeadline("on_deadline", func(_ context.Context, st queuety.State) error {
				l.add("dl:"+st.String("key"), node)
				return nil
			})
			w.HandleJob("tick", func(ctx context.Context, _ queuety.Payload) error {
				info, _ := queuety.JobInfoFrom(ctx)
				l.tick(info.JobID)
				return nil
			})
			// A job only this node's worker runs shows that it works.
			w.HandleJob(onNode(node), func(ctx context.Context, _ queuety.Payload) error {
				info, _ := queuety.JobInfoFrom(ctx)
				l.add(fmt.Sprintf("%s:%d", onNode(node), info.JobID), node)
				return nil
			})
		}, fastMaintenance()))
	}
	return func() {
		var wg sync.WaitGroup
		for _, s := range stops {
			wg.Add(1)
			go func() { defer wg.Done(); s() }()
		}
		wg.Wait()
	}
}

// onNode is the handler only the worker through node runs.
func onNode(node int) string { return "on_node" + strconv.Itoa(node+1) }

// waitWorking dispatches a job only the worker through node runs, and
// waits until it ran: the worker is working (again).
func waitWorking(ctx context.Context, t *testing.T, q *queuety.Client, l *ledger, node int) {
	t.Helper()
	id, err := q.Dispatch(ctx, onNode(node), nil)
	require.NoError(t, err)
	unit := fmt.Sprintf("%s:%d", onNode(node), id)
	waitFor(ctx, t, "the worker through node"+strconv.Itoa(node+1)+" did not run its job", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.runs[unit]) > 0
	})
}

// dumpState logs what is left of a load that did not finish: the units
// never run, by kind, and the jobs by handler and status.
func dumpState(ctx context.Context, t *testing.T, db *sql.DB, prefix string, l *ledger, units []string) {
	t.Helper()
	missing := map[string]int{}
	var examples []string
	l.mu.Lock()
	for _, u := range units {
		if len(l.runs[u]) == 0 {
			kind, _, _ := strings.Cut(u, ":")
			missing[kind]++
			if len(examples) < 10 {
				examples = append(examples, u)
			}
		}
	}
	l.mu.Unlock()
	t.Logf("units never run: %v, e.g. %v", missing, examples)
	rows, err := db.QueryContext(ctx, "SELECT handler, status, COUNT(*) FROM "+prefix+"queuety_jobs GROUP BY handler, status")
	if err != nil {
		t.Logf("read jobs: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var h, st string
		var n int
		if rows.Scan(&h, &st, &n) == nil {
			t.Logf("jobs %s %s: %d", h, st, n)
		}
	}
	rows2, err := db.QueryContext(ctx, "SELECT status, COUNT(*) FROM "+prefix+"queuety_workflows GROUP BY status")
	if err != nil {
		return
	}
	defer rows2.Close()
	for rows2.Next() {
		var st string
		var n int
		if rows2.Scan(&st, &n) == nil {
			t.Logf("workflows %s: %d", st, n)
		}
	}
}

// loadScale reads the size of the mixed load from the environment.
func loadScale() (jobs, workflows, expiring int) {
	return scaleOf("QUEUETY_GALERA_JOBS", 1500), scaleOf("QUEUETY_GALERA_WORKFLOWS", 150), scaleOf("QUEUETY_GALERA_EXPIRING", 150)
}

// testKillNode: a mixed load of jobs, three-step workflows and expiring
// workflows runs on workers through all three nodes; a third of the way
// through, node3 is SIGKILLed, and restarted (rejoining by incremental
// state transfer) once the load went on without it for a while. Nothing is
// lost; nothing runs twice except a unit whose earlier run went through
// node3 before it came back (its completion died with the node); every
// deadline handler runs once; the workers through node1 and node2 carry on
// while node3 is down, and so does node3's worker, which names every node
// in its DSN and moves to another one without a restart.
func testKillNode(t *testing.T, c *galera.Cluster) {
	jobs, workflows, expiring := loadScale()
	total := jobs + 3*workflows + expiring
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+total/2000)*time.Minute)
	defer cancel()
	// Each worker's DSN names every node, its own first: the worker
	// through the killed node moves to another one without a restart.
	qs := clientsVia(ctx, t, c, "galera_kill", func(i int) string { return failoverDSN(c, i, "galera_kill", "gk_") })
	db := syncedDB(t, c.Node(0), "galera_kill")
	t0 := time.Now()
	units := mixedLoad(ctx, t, qs, jobs, workflows, expiring, 5*time.Second+time.Duration(total/1000)*time.Second)
	t.Logf("dispatched %d jobs, %d three-step workflows and %d expiring workflows in %s", jobs, workflows, expiring, time.Since(t0).Round(time.Millisecond))

	const victim = 2
	l := newLedger()
	// A schedule fires a job every second, catching up every slot, ticked
	// by the workers of all three nodes through the kill.
	tickID, err := qs[0].Schedule("tick", nil).Every(time.Second).CatchUp(queuetytype.CatchUpAll).Save(ctx)
	require.NoError(t, err)
	tickSched, err := qs[0].ScheduleByID(ctx, tickID)
	require.NoError(t, err)
	cert0, bf0 := conflicts(ctx, t, c)
	t0 = time.Now()
	stop := startLoadWorkers(t, qs, l)
	waitFor(ctx, t, "a third of the load did not run", func() bool { return l.distinct() >= total/3 })
	killedAt := time.Now()
	// The victim's counters start again from zero when it restarts.
	vcert, vbf := nodeConflicts(ctx, t, c.Node(victim))
	c.Node(victim).Kill()
	l.countFrom()
	t.Logf("SIGKILLed %s after %d of %d units (%s into the run)", c.Node(victim).Name(), l.distinct(), total, killedAt.Sub(t0).Round(time.Millisecond))
	// The load goes on through the other two nodes: wait until they have
	// run a tenth of it (or all of it) before node3 comes back.
	before := l.distinct()
	waitFor(ctx, t, "the load did not go on through the other nodes", func() bool {
		d := l.distinct()
		return d-before >= total/10 || d == total
	})
	require.NoError(t, c.Node(victim).Restart(ctx))
	backAt := time.Now()
	down := l.countFrom()
	t.Logf("%s rejoined %s after the kill; while it was down node1 ran %d units, node2 %d, node3 %d",
		c.Node(victim).Name(), backAt.Sub(killedAt).Round(time.Millisecond), down[0], down[1], down[2])
	require.Positive(t, down[0]+down[1], "the workers through the surviving nodes ran nothing while node3 was down")
	require.Positive(t, down[victim], "the worker whose node was killed ran nothing through the other nodes")
	waitWorking(ctx, t, qs[victim], l, victim)

	if !waitUntil(ctx, func() bool { return l.distinct() >= total+1 }) {
		dumpState(context.Background(), t, db, "gk_", l, units)
		t.Fatalf("the load did not finish: %d of %d units ran", l.distinct()-1, total)
	}
	waitFor(ctx, t, "jobs still open", func() bool {
		return count(ctx, t, db, "SELECT COUNT(*) FROM gk_queuety_jobs WHERE status IN ('pending', 'processing') AND handler NOT IN ('never', 'tick')") == 0
	})
	elapsed := time.Since(t0)
	after := l.countFrom()
	stop()
	slots, tickAgain := checkTicks(ctx, t, qs[0], db, l, tickID, tickSched.NextRun)
	cert, bf := conflicts(ctx, t, c)
	cert, bf = cert+vcert, bf+vbf

	lost, rerun, twice := l.verdict(units, victim, killedAt, backAt)
	require.Empty(t, lost, "units never run")
	require.Empty(t, twice, "units run twice without a crash")
	require.Equal(t, expiring, count(ctx, t, db, "SELECT COUNT(*) FROM gk_queuety_jobs WHERE handler = 'on_deadline'"), "deadline callback jobs enqueued")
	require.Equal(t, workflows, count(ctx, t, db, "SELECT COUNT(*) FROM gk_queuety_workflows WHERE status = 'completed'"), "workflows completed")
	require.Equal(t, expiring, count(ctx, t, db, "SELECT COUNT(*) FROM gk_queuety_workflows WHERE status = 'failed'"), "workflows failed at their deadline")
	t.Logf("ran %d units (%d jobs, %d workflow steps, %d deadline handlers) through 3 nodes, one SIGKILLed and rejoined, in %s (%.0f units/s): 0 lost, 0 run twice without a crash, %d re-run after their node died; after the rejoin node3 ran %d units; a schedule fired %d slots, each once (%d fired jobs run again after the crash); certification failures %d, brute-force aborts %d",
		total, jobs, 3*workflows, expiring, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), len(rerun), after[victim], slots, tickAgain, cert-cert0, bf-bf0)
}

// testStopNode: node2 is shut down cleanly; the other two remain a
// primary component and keep taking work: jobs dispatched through them
// run on their workers while node2 is down. node2 then rejoins and its
// worker runs work again. Every job runs exactly once.
func testStopNode(t *testing.T, c *galera.Cluster) {
	const victim = 1
	n := scaleOf("QUEUETY_GALERA_JOBS", 1500) / 3
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	qs := clients(ctx, t, c, "galera_stop", "gt_")
	db := syncedDB(t, c.Node(0), "galera_stop")
	l := newLedger()
	stop := startLoadWorkers(t, qs, l)

	c.Node(victim).Stop()
	for _, i := range []int{0, 2} {
		st, err := c.Node(i).Status(ctx)
		require.NoError(t, err)
		require.True(t, st.Synced(galera.Size-1), "%s after %s stopped: %+v", c.Node(i).Name(), c.Node(victim).Name(), st)
	}
	l.countFrom()
	// The clients opened while the cluster had three nodes, and the
	// auto-increment step the nodes give ids with is now two: the ids a
	// multi-row dispatch returns must still be those of its own rows.
	checkIDs(ctx, t, qs[0])
	var units []string
	dispatch := func(from, to int, through ...*queuety.Client) {
		for start := from; start < to; start += 250 {
			var reqs []queuety.JobRequest
			for i := start; i < min(to, start+250); i++ {
				reqs = append(reqs, queuety.JobRequest{Handler: "count", Payload: map[string]any{"i": i}})
				units = append(units, "job:"+strconv.Itoa(i))
			}
			_, err := through[(start/250)%len(through)].DispatchMany(ctx, reqs)
			require.NoError(t, err)
		}
	}
	dispatch(0, n, qs[0], qs[2])
	waitFor(ctx, t, "the two remaining nodes did not run the jobs", func() bool { return l.distinct() == n })
	down := l.countFrom()
	require.Zero(t, down[victim], "runs through the stopped node")
	t.Logf("with %s stopped, node1 and node3 (a primary component of two) ran %d jobs: %d and %d", c.Node(victim).Name(), n, down[0], down[2])

	require.NoError(t, c.Node(victim).Restart(ctx))
	waitWorking(ctx, t, qs[victim], l, victim)
	dispatch(n, 2*n, qs...)
	waitFor(ctx, t, "the jobs after the rejoin did not run", func() bool { return l.distinct() == 2*n+1 })
	waitFor(ctx, t, "jobs still open", func() bool {
		return count(ctx, t, db, "SELECT COUNT(*) FROM gt_queuety_jobs WHERE status IN ('pending', 'processing') AND queue <> 'idcheck'") == 0
	})
	back := l.countFrom()
	stop()
	lost, _, twice := l.verdict(units, -1, time.Time{}, time.Time{})
	require.Empty(t, lost, "jobs never run")
	require.Empty(t, twice, "jobs run twice")
	t.Logf("after %s rejoined, the three workers ran %v of %d jobs", c.Node(victim).Name(), back, n)
}

// checkIDs dispatches ten jobs in one multi-row insert through q, all
// handled by nobody, and checks that each id returned is the job of that
// request.
func checkIDs(ctx context.Context, t *testing.T, q *queuety.Client) {
	t.Helper()
	var reqs []queuety.JobRequest
	for i := range 10 {
		reqs = append(reqs, queuety.JobRequest{Handler: "nobody", Payload: map[string]any{"n": i}, Options: []queuety.JobOption{queuety.OnQueue("idcheck")}})
	}
	ids, err := q.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	for i, id := range ids {
		j, err := q.Job(ctx, id)
		require.NoError(t, err, "job %d of request %d", id, i)
		require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(j.Payload), "job %d returned for request %d", id, i)
	}
}

// checkTicks runs what the schedule tickID fired and the workers left
// open, then checks that each slot from first to the schedule's next run
// fired exactly one job and that every fired job ran. It returns the
// slots and how many fired jobs ran more than once (a run whose
// completion died with a node).
func checkTicks(ctx context.Context, t *testing.T, q *queuety.Client, db *sql.DB, l *ledger, tickID int64, first time.Time) (slots, again int) {
	t.Helper()
	drain := worker.New(q, worker.Concurrency(4), worker.PollInterval(20*time.Millisecond), worker.NoMaintenance())
	drain.HandleJob("tick", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		l.tick(info.JobID)
		return nil
	})
	runUntil(ctx, t, drain, db, "SELECT COUNT(*) FROM gk_queuety_jobs WHERE handler = 'tick' AND status IN ('pending', 'processing')")
	var next time.Time
	require.NoError(t, db.QueryRowContext(ctx, "SELECT next_run FROM gk_queuety_schedules WHERE id = ?", tickID).Scan(&next))
	slots = int(next.Sub(first) / time.Second)
	require.Positive(t, slots, "the schedule fired nothing")
	require.Equal(t, slots, count(ctx, t, db, "SELECT COUNT(*) FROM gk_queuety_jobs WHERE handler = 'tick'"),
		"jobs fired for the slots from %s to %s", first, next)
	ran, again := l.tickRuns()
	require.Equal(t, slots, ran, "fired jobs that ran")
	return slots, again
}
