//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestChaos runs every scenario against one private MariaDB server, each
// in its own database, and prints the report table at the end.
func TestChaos(t *testing.T) {
	runChaos(t, "mariadb", func(t *testing.T) dbServer { return startMariaDB(t) }, allScenarios)
}

// allScenarios are the scenarios in the order they run.
var allScenarios = []scenarioDef{
	{"jobs", runJobs},
	{"workflows", runWorkflows},
	{"fanout", runFanOut},
	{"mariadb", runServerCrash},
	{"deadlines", runDeadlines},
	{"shutdown", runShutdown},
	{"restarts", runRestarts},
	{"overlap", runOverlap},
	{"callbacks", runCallbacks},
}

// scenarioDef is a scenario's name and how it runs.
type scenarioDef struct {
	name string
	run  func(*scenario)
}

// runChaos runs scenarios on servers start starts: one shared by the
// scenarios, and one of its own for crashScenario, the scenario that
// crashes its server. The shared server, never crashed, also holds every
// scenario's records (chaos_runs), the crash scenario's included: what the
// checks count against the queue must not depend on the crashed server's
// recovery of a table of the suite's own.
func runChaos(t *testing.T, crashScenario string, start func(*testing.T) dbServer, scenarios []scenarioDef) {
	if !supported {
		t.Skip("the chaos suite runs on Linux only")
	}
	s := loadScale(t)
	t.Log(s)
	srv := start(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	// The test's own connections break when the server is killed; the
	// driver's log of that is noise here.
	_ = gomysql.SetLogger(log.New(io.Discard, "", 0))

	var results []*result
	began := time.Now()
	defer func() {
		var b strings.Builder
		printReport(&b, s, results, time.Since(began))
		fmt.Print(b.String())
	}()
	for _, sc := range scenarios {
		if !s.runs(sc.name) {
			continue
		}
		r := &result{Name: sc.name}
		results = append(results, r)
		t.Run(sc.name, func(t *testing.T) {
			server := srv
			if sc.name == crashScenario {
				// The scenario that crashes the server gets a server of
				// its own, so that whatever a crash leaves behind cannot
				// reach the scenarios after it.
				server = start(t)
			}
			c := newScenario(t, s, server, srv, exe, sc.name, r)
			t0 := time.Now()
			defer func() { r.Took = time.Since(t0) }()
			sc.run(c)
		})
	}
}

// dbServer is a private database server the scenarios run on.
type dbServer interface {
	// root is the server's temporary directory; the scenarios' logs go
	// under root/logs.
	root() string
	// driver is the database/sql driver name of driverDSN.
	driver() string
	// driverDSN is a database/sql DSN of database db, "" for the
	// server's administrative database.
	driverDSN(db string) string
	// queuetyDSN is the DSN workers and clients open database db with.
	queuetyDSN(db, prefix string) string
	// crash kills the server the way a crash does and waits until it is
	// gone; restart starts it again on the same data and port and says
	// how long crash recovery and start-up took.
	crash()
	restart() (time.Duration, error)
}

// scenario is one scenario's database, client, processes and result.
type scenario struct {
	t      *testing.T
	s      scale
	srv    dbServer // the server of the queue's database
	pg     bool     // PostgreSQL: $n placeholders and its SQL dialect
	name   string
	prefix string
	db     *sql.DB // the test's own connection to the queue's database, for counting
	// runsSrv and runsDB hold chaos_runs: the suite's shared server, which
	// no scenario crashes; runs is the test's connection to it.
	runsSrv dbServer
	runsDB  string
	runs    *sql.DB
	q       *queuety.Client
	fleet   *fleet
	rng     *rand.Rand
	res     *result
	ctx     context.Context
}

// newScenario creates the scenario's queue database on srv and its
// records' database (chaos_runs) on runsSrv, a server no scenario crashes.
func newScenario(t *testing.T, s scale, srv, runsSrv dbServer, exe, name string, res *result) *scenario {
	ctx := context.Background()
	dbName, runsDB := "chaos_"+name, "chaos_"+name+"_runs"
	db := createDB(t, srv, dbName)
	runs := createDB(t, runsSrv, runsDB)
	pg := srv.driver() == "pgx"
	for _, stmt := range runsTable(runsSrv.driver() == "pgx") {
		_, err := runs.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}

	dir := filepath.Join(srv.root(), "logs", name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	logFile, err := os.Create(filepath.Join(dir, "client.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })
	const prefix = "cq_"
	q, err := queuety.Open(ctx, srv.queuetyDSN(dbName, prefix), queuety.WithLogger(slog.New(slog.NewTextHandler(logFile, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { q.Close() })

	h := fnv.New64a()
	h.Write([]byte(name))
	seed := uint64(s.Seed) ^ h.Sum64()
	t.Logf("%s: database %s, records in %s, logs in %s, seed %d", name, dbName, runsDB, dir, seed)
	return &scenario{
		t: t, s: s, srv: srv, pg: pg, name: name, prefix: prefix, db: db, runsSrv: runsSrv, runsDB: runsDB, runs: runs, q: q,
		fleet: newFleet(t, exe, dir), rng: rand.New(rand.NewPCG(seed, 0)), res: res, ctx: ctx,
	}
}

// createDB creates database name on srv and opens it until the test ends.
func createDB(t *testing.T, srv dbServer, name string) *sql.DB {
	admin, err := sql.Open(srv.driver(), srv.driverDSN(""))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(context.Background(), "CREATE DATABASE "+name)
	require.NoError(t, err, "create database %s", name)
	db, err := sql.Open(srv.driver(), srv.driverDSN(name))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// workerConfig is the configuration of this scenario's worker processes.
func (sc *scenario) workerConfig(stale time.Duration, queues ...string) childConfig {
	if len(queues) == 0 {
		queues = []string{queuetytype.DefaultQueue}
	}
	return childConfig{
		Mode: "worker", DSN: sc.srv.queuetyDSN("chaos_"+sc.name, sc.prefix), RunsDSN: sc.runsSrv.driverDSN(sc.runsDB), RunsDriver: sc.runsSrv.driver(),
		Queues: queues, Concurrency: sc.s.Concurrency, StaleTimeout: stale, Lease: sc.s.Lease, Poll: sc.s.Poll,
		StaleSweep: sc.s.StaleSweep, Shutdown: sc.s.Shutdown, HardStop: sc.s.HardStop, JobSleep: sc.s.JobSleep, HangFor: 10 * time.Minute,
	}
}

func (sc *scenario) startWorkers(n int, cfg childConfig) {
	for range n {
		_, err := sc.fleet.start("worker", cfg)
		require.NoError(sc.t, err)
	}
	sc.res.Workers = max(sc.res.Workers, n)
}

// count runs a COUNT query on the queue's database; %s in q is the table
// prefix.
func (sc *scenario) count(q string, args ...any) (int, error) {
	return sc.countIn(sc.db, q, args...)
}

// countRuns runs a COUNT query on chaos_runs' database.
func (sc *scenario) countRuns(q string, args ...any) (int, error) {
	return sc.countIn(sc.runs, q, args...)
}

func (sc *scenario) countIn(db *sql.DB, q string, args ...any) (int, error) {
	ctx, cancel := context.WithTimeout(sc.ctx, 10*time.Second)
	defer cancel()
	var n int
	err := db.QueryRowContext(ctx, sc.rebind(strings.ReplaceAll(q, "%s", sc.prefix)), args...).Scan(&n)
	return n, err
}

// rebind turns the ? placeholders of q into PostgreSQL's $n on
// PostgreSQL.
func (sc *scenario) rebind(q string) string {
	if !sc.pg {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// utcNow is the SQL for the current time in UTC.
func (sc *scenario) utcNow() string {
	if sc.pg {
		return "LOCALTIMESTAMP" // the session's time zone is UTC
	}
	return "UTC_TIMESTAMP()"
}

// completed counts completed jobs of the given handlers.
func (sc *scenario) completed(handlers ...string) (int, error) {
	return sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE status = 'completed' AND handler IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(handlers)), ",")+`)`, toAny(handlers)...)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// waitFor polls cond every interval until it holds or timeout passes.
// Errors (the server may be down) count as "not yet".
func waitFor(timeout, interval time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if err == nil && ok {
			return true, nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return false, last
		}
		time.Sleep(interval)
	}
}

// sigkillDuring kills `kills` random workers with SIGKILL, one each time
// progress passes another 1/(kills+1) of total, and starts a replacement
// after each.
func (sc *scenario) sigkillDuring(total, kills int, cfg childConfig, progress func() (int, error)) {
	sc.disruptDuring("SIGKILL", total, kills, cfg, progress, func(p *proc) {
		sc.fleet.sigkill(p)
		sc.res.Kills++
	})
}

// disruptDuring calls disrupt on a random running worker n times, each
// time progress passes another 1/(n+1) of total, and starts a replacement
// after each.
func (sc *scenario) disruptDuring(what string, total, n int, cfg childConfig, progress func() (int, error), disrupt func(*proc)) {
	t := sc.t
	for i := 1; i <= n; i++ {
		threshold := total * i / (n + 1)
		var done int
		ok, err := waitFor(sc.s.Timeout, 10*time.Millisecond, func() (bool, error) {
			n, err := progress()
			done = n
			return n >= threshold, err
		})
		if !ok {
			t.Errorf("%s %d: progress did not reach %d/%d within %s (last error: %v)", what, i, threshold, total, sc.s.Timeout, err)
			return
		}
		if done >= total {
			sc.res.note("the run finished before %s %d; %d landed mid-run", what, i, i-1)
			return
		}
		live := sc.fleet.running("worker")
		if len(live) == 0 {
			t.Errorf("%s %d: no worker running", what, i)
			return
		}
		p := live[sc.rng.IntN(len(live))]
		disrupt(p)
		t.Logf("%s %d: %s (pid %d) at %d/%d done", what, i, p.name, p.pid, done, total)
		_, err = sc.fleet.start("worker", cfg)
		require.NoError(t, err)
	}
}

// waitDone waits until progress reaches total.
func (sc *scenario) waitDone(total int, progress func() (int, error)) {
	var done int
	ok, err := waitFor(sc.s.Timeout, 100*time.Millisecond, func() (bool, error) {
		n, err := progress()
		done = n
		return n >= total, err
	})
	if !ok {
		sc.t.Errorf("only %d/%d done after %s (last error: %v)", done, total, sc.s.Timeout, err)
	}
}

// stopWorkers sends SIGTERM to every running worker and counts the hung
// ones; it returns the slowest exit.
func (sc *scenario) stopWorkers() time.Duration {
	return sc.stop(sc.fleet.running("worker"))
}

// stop sends SIGTERM to ps, counts the hung ones and returns the slowest
// exit.
func (sc *scenario) stop(ps []*proc) time.Duration {
	res := sc.fleet.terminate(ps, sc.s.Shutdown+sc.s.StopBound)
	var slowest time.Duration
	for _, r := range res {
		slowest = max(slowest, r.took)
		if r.hung {
			sc.res.Hung++
			sc.res.note("%s (pid %d) had not exited %s after SIGTERM (shutdown timeout %s + bound %s): hung; last lines of its log:\n%s",
				r.p.name, r.p.pid, r.took, sc.s.Shutdown, sc.s.StopBound, indent(tail(r.p.logPath, 8)))
		}
	}
	return slowest
}

func indent(s string) string { return "      " + strings.ReplaceAll(s, "\n", "\n      ") }

// finish analyses the runs against the expected units, fills in the
// result and asserts the invariants every scenario shares.
func (sc *scenario) finish(expected []string) analysis {
	t := sc.t
	sc.res.Dispatched = len(expected)
	ctx := sc.ctx
	jobs, err := loadJobUnits(ctx, sc.db, sc.prefix, sc.pg)
	require.NoError(t, err)
	runs, err := loadRuns(ctx, sc.runs)
	require.NoError(t, err)
	retried, failed, err := loadRetried(ctx, sc.db, sc.prefix)
	require.NoError(t, err)
	a := analyze(expected, jobs, runs, sc.fleet.killTimes(), retried)
	sc.res.Lost, sc.res.Phantom = len(a.lost), len(a.phantom)
	sc.res.DupNoCrash, sc.res.DupCrash = len(a.dupNoCrash), len(a.dupCrash)
	if sc.res.Kills > 0 && sc.name != "mariadb" && sc.name != "postgres" {
		sc.res.Recovery = a.recovery
		sc.res.note("%d SIGKILLs: %d interrupted %d recorded runs between them, %d interrupted none that was recorded",
			sc.res.Kills, sc.res.Kills-a.quietKills, a.orphaned, a.quietKills)
		if len(a.returned) > 0 {
			sc.res.note("stale recovery handed the interrupted runs' jobs back %.1f s (median) / %.1f s (max) after the kill "+
				"(log rows, ±1 s); they started again %.2f s / %.2f s after it",
				median(a.returned).Seconds(), slices.Max(a.returned).Seconds(),
				median(a.recovery).Seconds(), slices.Max(a.recovery).Seconds())
		}
	}
	sc.res.note("%d attempts handed back by stale recovery or a timeout ('retried' log rows), %d failed in their handler",
		len(retried), failed)
	var logs []string
	for _, p := range sc.fleet.all() {
		logs = append(logs, p.logPath)
	}
	if sum := logSummary(logs); len(sum) > 0 {
		sc.res.note("warnings and errors in the child logs:\n%s", indent(strings.Join(first(sum, 8), "\n")))
	}
	crashes := sc.fleet.crashReports()
	sc.res.Crashes = len(crashes)

	assert.Empty(t, a.lost, "units never completed (%d), first ones: %v", len(a.lost), first(a.lost, 10))
	assert.Empty(t, a.phantom, "units completed without a recorded run (%d), first ones: %v", len(a.phantom), first(a.phantom, 10))
	assert.Empty(t, a.dupNoCrash, "units that ran twice without a SIGKILL explaining it (%d), first ones:\n%s",
		len(a.dupNoCrash), strings.Join(first(a.dupNoCrash, 10), "\n"))
	assert.Empty(t, crashes, "worker crashes:\n%s", strings.Join(crashes, "\n\n"))
	return a
}

// assertHung fails on hung processes unless QUEUETY_CHAOS_ALLOW_HUNG=1.
func (sc *scenario) assertHung() {
	if sc.res.Hung == 0 {
		return
	}
	if sc.s.AllowHung {
		sc.t.Logf("%d hung processes (allowed by QUEUETY_CHAOS_ALLOW_HUNG=1)", sc.res.Hung)
		return
	}
	sc.t.Errorf("%d processes hung after SIGTERM (set QUEUETY_CHAOS_ALLOW_HUNG=1 to report them without failing):\n%s",
		sc.res.Hung, strings.Join(sc.res.Notes, "\n"))
}

// dispatchJobs enqueues n no-op jobs in batches and returns their units.
func (sc *scenario) dispatchJobs(n int) []string {
	t := sc.t
	units := make([]string, 0, n)
	t0 := time.Now()
	for start := 0; start < n; start += 1000 {
		reqs := make([]queuety.JobRequest, min(1000, n-start))
		for i := range reqs {
			reqs[i] = queuety.JobRequest{Handler: hNoop, Payload: queuety.State{"i": start + i},
				Options: sc.s.jobOptions()}
		}
		ids, err := sc.q.DispatchMany(sc.ctx, reqs)
		require.NoError(t, err)
		for _, id := range ids {
			units = append(units, fmt.Sprintf("job:%d", id))
		}
	}
	t.Logf("dispatched %d jobs in %s", n, time.Since(t0).Round(time.Millisecond))
	return units
}

// dispatchWorkflows dispatches n workflows built by def from 8 goroutines
// and returns their ids.
func (sc *scenario) dispatchWorkflows(n int, def func(i int) (*builder.Builder, queuety.State)) []int64 {
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				b, st := def(i)
				ids[i], errs[i] = b.Dispatch(sc.ctx, sc.q, st)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(sc.t, err, "dispatch workflow %d", i)
	}
	sc.t.Logf("dispatched %d workflows in %s", n, time.Since(t0).Round(time.Millisecond))
	return ids
}

// runJobs: N workers drain M no-op jobs while K random workers are
// SIGKILLed and replaced.
func runJobs(sc *scenario) {
	units := sc.dispatchJobs(sc.s.Jobs)
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	sc.startWorkers(sc.s.Workers, cfg)
	progress := func() (int, error) { return sc.completed(hNoop) }
	sc.sigkillDuring(len(units), sc.s.JobKills, cfg, progress)
	sc.waitDone(len(units), progress)
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)
	sc.assertHung()
}

// runWorkflows: the same with 3-step workflows; the unit is a step.
func runWorkflows(sc *scenario) {
	ids := sc.dispatchWorkflows(sc.s.Workflows, func(i int) (*builder.Builder, queuety.State) {
		b := builder.Workflow("chaos_pipeline").MaxAttempts(attempts)
		for _, h := range []string{hStep1, hStep2, hStep3} {
			b = b.Then(h, func(st *queuety.WorkflowStep) {
				for _, o := range sc.s.jobOptions() {
					o(&st.Options)
				}
			})
		}
		return b, queuety.State{"i": i}
	})
	var units []string
	for _, id := range ids {
		for step := range 3 {
			units = append(units, fmt.Sprintf("wf:%d:%d", id, step))
		}
	}
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	sc.startWorkers(sc.s.Workers, cfg)
	progress := func() (int, error) { return sc.completed(hStep1, hStep2, hStep3) }
	sc.sigkillDuring(len(units), sc.s.WFKills, cfg, progress)
	sc.waitDone(len(units), progress)
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)
	done, err := sc.count(`SELECT COUNT(*) FROM %squeuety_workflows WHERE status = 'completed'`)
	require.NoError(sc.t, err)
	assert.Equal(sc.t, len(ids), done, "completed workflows")
	sc.assertHung()
}

// runFanOut: F workflows, each a for_each step over K items of the
// initial state (one branch job per item) and a step after it, while
// random workers are SIGKILLed and replaced. The unit is a branch
// (wf:<id>:0:item:<i>) or the step after (wf:<id>:1); the for_each
// placeholder job runs no handler and is no unit. Each for_each step must
// settle exactly once: one step_completed event, an aggregate counting K
// successes, one job for the step after it.
func runFanOut(sc *scenario) {
	t := sc.t
	k := sc.s.FanItems
	items := make([]any, k)
	for i := range items {
		items[i] = fmt.Sprintf("item-%d", i)
	}
	ids := sc.dispatchWorkflows(sc.s.FanOuts, func(i int) (*builder.Builder, queuety.State) {
		b := builder.Workflow("chaos_fanout").MaxAttempts(attempts).
			ForEach("items", hBranch, builder.ResultKey("r"), builder.Job(sc.s.jobOptions()...)).
			Then(hAfter, builder.Job(sc.s.jobOptions()...))
		return b, queuety.State{"i": i, "items": items}
	})
	var units []string
	for _, id := range ids {
		for i := range k {
			units = append(units, branchUnit(id, 0, i))
		}
		units = append(units, fmt.Sprintf("wf:%d:1", id))
	}
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	sc.startWorkers(sc.s.Workers, cfg)
	progress := func() (int, error) { return sc.completed(hBranch, hAfter) }
	sc.sigkillDuring(len(units), sc.s.FanKills, cfg, progress)
	sc.waitDone(len(units), progress)
	ok, err := waitFor(sc.s.Timeout, 100*time.Millisecond, func() (bool, error) {
		n, err := sc.count(`SELECT COUNT(*) FROM %squeuety_workflows WHERE status = 'completed'`)
		return n >= len(ids), err
	})
	if !ok {
		t.Errorf("not every workflow completed within %s (last error: %v)", sc.s.Timeout, err)
	}
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)

	// Per workflow: the ids breaking each rule.
	checks := []struct{ what, q string }{
		{"workflows not completed", `SELECT id FROM %squeuety_workflows WHERE status <> 'completed'`},
		{"workflows without exactly one step_completed event for the for_each step",
			`SELECT w.id FROM %squeuety_workflows w LEFT JOIN %squeuety_workflow_events e
				ON e.workflow_id = w.id AND e.step_index = 0 AND e.event = 'step_completed'
			GROUP BY w.id HAVING COUNT(e.id) <> 1`},
		{"workflows whose aggregate r.succeeded is not " + strconv.Itoa(k),
			`SELECT id FROM %squeuety_workflows
			WHERE COALESCE(JSON_VALUE(state, '$.r.succeeded'), -1) <> ` + strconv.Itoa(k)},
		{"workflows without exactly one for_each placeholder job",
			`SELECT w.id FROM %squeuety_workflows w LEFT JOIN %squeuety_jobs j ON j.workflow_id = w.id AND j.handler = '__queuety_for_each'
			GROUP BY w.id HAVING COUNT(j.id) <> 1`},
		{"workflows without exactly " + strconv.Itoa(k) + " branch jobs, one per item",
			`SELECT w.id FROM %squeuety_workflows w LEFT JOIN %squeuety_jobs j ON j.workflow_id = w.id AND j.handler = '` + hBranch + `'
			GROUP BY w.id HAVING COUNT(j.id) <> ` + strconv.Itoa(k) + `
				OR COUNT(DISTINCT JSON_VALUE(j.payload, '$.__for_each.item_index')) <> ` + strconv.Itoa(k)},
		{"workflows without exactly one job for the step after the for_each step",
			`SELECT w.id FROM %squeuety_workflows w LEFT JOIN %squeuety_jobs j ON j.workflow_id = w.id AND j.handler = '` + hAfter + `'
			GROUP BY w.id HAVING COUNT(j.id) <> 1`},
		{"workflows with a branch job still pending or processing",
			`SELECT DISTINCT workflow_id FROM %squeuety_jobs WHERE handler = '` + hBranch + `' AND status IN ('pending', 'processing')`},
	}
	for _, c := range checks {
		bad, err := sc.ids(c.q)
		require.NoError(t, err, c.what)
		assert.Empty(t, bad, "%s (%d of %d): %v", c.what, len(bad), len(ids), first(bad, 10))
	}
	branchJobs, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler = ?`, hBranch)
	require.NoError(t, err)
	branchRuns, err := sc.countRuns(`SELECT COUNT(*) FROM chaos_runs WHERE handler = ?`, hBranch)
	require.NoError(t, err)
	sc.res.note("%d workflows × %d items: %d branch jobs, %d branch runs recorded", len(ids), k, branchJobs, branchRuns)
	sc.assertHung()
}

// ids runs a query returning one id a row on the queue's database; %s in
// q is the table prefix.
func (sc *scenario) ids(q string) ([]int64, error) { return sc.idsIn(sc.db, q) }

func (sc *scenario) idsIn(db *sql.DB, q string) ([]int64, error) {
	ctx, cancel := context.WithTimeout(sc.ctx, 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, strings.ReplaceAll(q, "%s", sc.prefix))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// runServerCrash: N workers drain M no-op jobs while the server is
// crashed (MariaDB: SIGKILL; PostgreSQL: an immediate shutdown), left down
// for a while and restarted on the same data directory.
// The workers must ride it out. The recovery columns measure the time from
// the kill to the first job that started after the restart.
func runServerCrash(sc *scenario) {
	t := sc.t
	units := sc.dispatchJobs(sc.s.DBJobs)
	cfg := sc.workerConfig(sc.s.DBStale)
	sc.startWorkers(sc.s.Workers, cfg)
	progress := func() (int, error) { return sc.completed(hNoop) }
	type outage struct{ killed, up time.Time }
	var outages []outage
	for i := 1; i <= sc.s.DBKills; i++ {
		threshold := len(units) * i / (sc.s.DBKills + 1)
		var done int
		ok, err := waitFor(sc.s.Timeout, 10*time.Millisecond, func() (bool, error) {
			n, err := progress()
			done = n
			return n >= threshold, err
		})
		if !ok {
			t.Errorf("server kill %d: progress did not reach %d/%d (last error: %v)", i, threshold, len(units), err)
			break
		}
		if done >= len(units) {
			sc.res.note("the run finished before server kill %d", i)
			break
		}
		killed := time.Now()
		sc.srv.crash()
		sc.res.Kills++
		t.Logf("server kill %d: crashed the server at %d/%d done; down for %s", i, done, len(units), sc.s.DBDown)
		time.Sleep(sc.s.DBDown) // the outage itself
		took, err := sc.srv.restart()
		require.NoError(t, err, "restart the private server")
		outages = append(outages, outage{killed, time.Now()})
		t.Logf("server kill %d: restarted in %s (crash recovery and start-up)", i, took.Round(time.Millisecond))
		if running := len(sc.fleet.running("worker")); running != sc.s.Workers {
			t.Errorf("server kill %d: %d of %d workers still running after the restart", i, running, sc.s.Workers)
		}
	}
	sc.waitDone(len(units), progress)
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)

	runs, err := loadRuns(sc.ctx, sc.runs)
	require.NoError(t, err)
	for i, o := range outages {
		var resumed time.Time
		for _, r := range runs {
			if !r.startedAt.Before(o.up) {
				resumed = r.startedAt
				break
			}
		}
		if resumed.IsZero() {
			sc.res.note("server kill %d: no job started after the restart", i+1)
			continue
		}
		sc.res.Recovery = append(sc.res.Recovery, resumed.Sub(o.killed))
		sc.res.note("server kill %d: down %s, first job started %s after the server answered again",
			i+1, o.up.Sub(o.killed).Round(time.Millisecond), resumed.Sub(o.up).Round(time.Millisecond))
	}
	sc.assertHung()
}

// runDeadlines: W workflows pass their deadline while no worker can run
// their step; S sweeper processes then sweep at the same instant, and the
// workers run the OnDeadline callbacks. Each callback must run exactly
// once.
func runDeadlines(sc *scenario) {
	t := sc.t
	w := sc.s.Expired
	keys := make([]string, w)
	ids := sc.dispatchWorkflows(w, func(i int) (*builder.Builder, queuety.State) {
		keys[i] = fmt.Sprintf("dl-%d", i)
		return builder.Workflow("chaos_doomed").Then(hNever).MustCompleteWithin(0, 0, 0, 1).OnDeadline(hDeadline),
			queuety.State{"key": keys[i]}
	})
	units := make([]string, w)
	for i, k := range keys {
		units[i] = "dl:" + k
	}
	// The workers do not sweep deadlines themselves: the sweepers do.
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	cfg.Deadlines = -1
	sc.startWorkers(sc.s.Workers, cfg)

	ok, err := waitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
		n, err := sc.count(`SELECT COUNT(*) FROM %squeuety_workflows WHERE status = 'running' AND deadline_at < ` + sc.utcNow())
		return n == w, err
	})
	require.True(t, ok, "the workflows did not all pass their deadline (last error: %v)", err)

	// The sweepers open their clients, then wait at a gate (a file) so
	// that they all sweep at the same instant.
	gate := filepath.Join(sc.srv.root(), "logs", sc.name, "gate")
	var sweepers []*proc
	for range sc.s.Sweepers {
		p, err := sc.fleet.start("sweeper", childConfig{Mode: "sweeper", DSN: cfg.DSN, Gate: gate})
		require.NoError(t, err)
		sweepers = append(sweepers, p)
	}
	ok, err = waitFor(time.Minute, 10*time.Millisecond, func() (bool, error) {
		for _, p := range sweepers {
			if !strings.Contains(p.out.String(), "ready") {
				return false, nil
			}
		}
		return true, nil
	})
	require.True(t, ok, "the sweepers did not all open their clients")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	total := 0
	for _, p := range sweepers {
		select {
		case <-p.done:
		case <-time.After(sc.s.Timeout):
			t.Fatalf("%s did not finish within %s", p.name, sc.s.Timeout)
		}
		out := strings.TrimSpace(p.out.String())
		line := out[strings.LastIndex(out, "\n")+1:]
		n, err := strconv.Atoi(strings.TrimPrefix(line, "expired "))
		if err != nil {
			t.Errorf("%s printed %q", p.name, out)
			continue
		}
		total += n
		sc.res.note("%s expired %d workflows", p.name, n)
	}
	assert.Equal(t, w, total, "workflows expired by the sweepers together")

	ok, err = waitFor(sc.s.Timeout, 100*time.Millisecond, func() (bool, error) {
		open, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler = ? AND status IN ('pending', 'processing')`, hDeadline)
		if err != nil {
			return false, err
		}
		done, err := sc.completed(hDeadline)
		return open == 0 && done >= w, err
	})
	if !ok {
		t.Errorf("the deadline callbacks did not all complete within %s (last error: %v)", sc.s.Timeout, err)
	}
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)

	failed, err := sc.count(`SELECT COUNT(*) FROM %squeuety_workflows WHERE status = 'failed'`)
	require.NoError(t, err)
	assert.Equal(t, len(ids), failed, "workflows failed at their deadline")
	cbJobs, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler = ?`, hDeadline)
	require.NoError(t, err)
	assert.Equal(t, w, cbJobs, "deadline callback jobs enqueued")
	perKey, err := sc.countRuns(`SELECT COUNT(*) FROM (SELECT tag FROM chaos_runs WHERE handler = ? GROUP BY tag HAVING COUNT(*) = 1) once`, hDeadline)
	require.NoError(t, err)
	assert.Equal(t, w, perKey, "deadline handlers that ran exactly once")
	sc.res.note("%d callback jobs for %d expired workflows; %d handlers ran exactly once", cbJobs, w, perKey)
	sc.assertHung()
}

// runShutdown: each worker runs a handler that ignores its context, then
// gets SIGTERM. A worker must exit within its shutdown timeout plus the
// bound; one that does not is hung.
func runShutdown(sc *scenario) {
	t := sc.t
	h := sc.s.Hangers
	for i := range h {
		queue := fmt.Sprintf("hang-%d", i)
		_, err := sc.fleet.start("worker", sc.workerConfig(sc.s.StaleTimeout, queue))
		require.NoError(t, err)
		_, err = sc.q.Dispatch(sc.ctx, hHang, queuety.State{"i": i}, queuety.OnQueue(queue), queuety.MaxAttempts(1))
		require.NoError(t, err)
	}
	sc.res.Workers, sc.res.Dispatched, sc.res.NoLost = h, h, true
	ok, err := waitFor(sc.s.Timeout, 50*time.Millisecond, func() (bool, error) {
		n, err := sc.countRuns(`SELECT COUNT(*) FROM chaos_runs WHERE handler = ?`, hHang)
		return n >= h, err
	})
	require.True(t, ok, "the hanging handlers did not all start (last error: %v)", err)

	res := sc.fleet.terminate(sc.fleet.running("worker"), sc.s.Shutdown+sc.s.StopBound)
	var exits []string
	for _, r := range res {
		if r.hung {
			sc.res.Hung++
			exits = append(exits, r.p.name+": hung")
			continue
		}
		exits = append(exits, fmt.Sprintf("%s: %s", r.p.name, r.took.Round(time.Millisecond)))
	}
	sc.res.note("shutdown timeout %s, bound %s; exit after SIGTERM: %s", sc.s.Shutdown, sc.s.StopBound, strings.Join(exits, ", "))
	if sc.res.Hung > 0 {
		sc.res.note("last lines of a hung worker's log:\n%s", indent(tail(res[0].p.logPath, 6)))
	}
	crashes := sc.fleet.crashReports()
	sc.res.Crashes = len(crashes)
	assert.Empty(t, crashes, "worker crashes:\n%s", strings.Join(crashes, "\n\n"))
	sc.assertHung()
}

// runRestarts: N workers drain M jobs while R random workers are stopped
// with SIGTERM (a graceful restart, as a deploy does) and replaced. Each
// job takes at least 20 ms, so a SIGTERM finds handlers running. Nothing
// may be lost or run twice, and each stopped worker must exit within its
// shutdown timeout plus the bound.
func runRestarts(sc *scenario) {
	units := sc.dispatchJobs(sc.s.Jobs)
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	cfg.JobSleep = max(cfg.JobSleep, 20*time.Millisecond)
	sc.startWorkers(sc.s.Workers, cfg)
	progress := func() (int, error) { return sc.completed(hNoop) }
	var exits []time.Duration
	sc.disruptDuring("SIGTERM", len(units), sc.s.Restarts, cfg, progress, func(p *proc) {
		exits = append(exits, sc.stop([]*proc{p}))
	})
	sc.waitDone(len(units), progress)
	slowest := sc.stopWorkers()
	if len(exits) > 0 {
		var each []string
		for _, d := range exits {
			each = append(each, d.Round(time.Millisecond).String())
		}
		sc.res.note("%d SIGTERMs mid-run; exits after %s", len(exits), strings.Join(each, ", "))
	}
	sc.res.note("slowest worker exit after the final SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)
	sc.assertHung()
}

// runOverlap: a graceful restart whose handlers outlive the shutdown
// grace period but end before the hard stop, with a healthy worker
// running beside the stopping ones. W-1 workers start a job each per slot
// (chaos.hang, ignoring its context for overlapHang), a healthy worker
// joins, then the first ones get SIGTERM. Their claims must stay renewed
// until the handlers return, so the healthy worker's stale sweeps leave
// the jobs alone: every job runs once, its one success is recorded (one
// attempt), and every stopping worker exits once its handlers have
// returned.
func runOverlap(sc *scenario) {
	t := sc.t
	stopping := max(sc.s.Workers-1, 1)
	n := stopping * sc.s.Concurrency
	cfg := sc.workerConfig(sc.s.StaleTimeout, "overlap")
	cfg.Shutdown, cfg.HardStop, cfg.HangFor = overlapGrace, overlapHardStop, overlapHang
	units := make([]string, 0, n)
	for i := range n {
		id, err := sc.q.Dispatch(sc.ctx, hHang, queuety.State{"i": i}, append(sc.s.jobOptions(), queuety.OnQueue("overlap"))...)
		require.NoError(t, err)
		units = append(units, fmt.Sprintf("job:%d", id))
	}
	sc.startWorkers(stopping, cfg)
	olds := sc.fleet.running("worker")
	ok, err := waitFor(sc.s.Timeout, 20*time.Millisecond, func() (bool, error) {
		got, err := sc.countRuns(`SELECT COUNT(*) FROM chaos_runs WHERE handler = ?`, hHang)
		return got >= n, err
	})
	require.True(t, ok, "the jobs did not all start within %s (last error: %v)", sc.s.Timeout, err)
	started := time.Now()
	_, err = sc.fleet.start("worker", cfg) // the healthy worker
	require.NoError(t, err)
	sc.res.Workers = stopping + 1

	// The stopping workers' handlers end overlapHang after they began:
	// past the grace period and the lease timeout, before the hard stop.
	sigterm := time.Now()
	res := sc.fleet.terminate(olds, overlapGrace+overlapHardStop+sc.s.StopBound)
	var exits []string
	for _, r := range res {
		if r.hung {
			sc.res.Hung++
			exits = append(exits, r.p.name+": hung")
			continue
		}
		exits = append(exits, fmt.Sprintf("%s: %s", r.p.name, r.took.Round(time.Millisecond)))
	}
	sc.res.note("%d workers running %d handlers of %s got SIGTERM %s after the last began (grace %s, hard stop %s, lease timeout %s); exit after SIGTERM: %s",
		stopping, n, overlapHang, sigterm.Sub(started).Round(10*time.Millisecond), overlapGrace, overlapHardStop,
		sc.s.StaleTimeout, strings.Join(exits, ", "))
	sc.waitDone(n, func() (int, error) { return sc.completed(hHang) })
	retried, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler = ? AND attempts <> 1`, hHang)
	require.NoError(t, err)
	assert.Zero(t, retried, "jobs run by more than one attempt: a success discarded, or a run taken over")
	slowest := sc.stopWorkers()
	sc.res.note("the healthy worker's exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)
	sc.assertHung()
}

// The "overlap" scenario's workers: a short grace period, handlers that
// outlive it and the lease timeout (defaultStale) by seconds, and a hard
// stop they end well within.
const (
	overlapGrace    = time.Second
	overlapHang     = 9 * time.Second
	overlapHardStop = 12 * time.Second
)

// runCallbacks: C batches of two no-op jobs with a slow then callback, and
// C workflows whose step no worker handles, past a 1 s deadline, with a
// slow deadline callback. Once every callback is running, each worker
// running one gets SIGKILL and a replacement is started. Stale recovery
// must hand every callback back, and each must then run to its end once,
// on a worker that was not killed.
func runCallbacks(sc *scenario) {
	t := sc.t
	n := sc.s.Callbacks
	var units, cbUnits []string
	for i := range n {
		reqs := []queuety.JobRequest{
			{Handler: hNoop, Payload: queuety.State{"batch": i, "n": 1}, Options: sc.s.jobOptions()},
			{Handler: hNoop, Payload: queuety.State{"batch": i, "n": 2}, Options: sc.s.jobOptions()},
		}
		id, err := sc.q.NewBatch(reqs...).Then(hThen).Dispatch(sc.ctx)
		require.NoError(t, err)
		cbUnits = append(cbUnits, thenTag(id))
	}
	jobIDs, err := sc.ids(`SELECT id FROM %squeuety_jobs WHERE batch_id IS NOT NULL`)
	require.NoError(t, err)
	require.Len(t, jobIDs, 2*n, "batch jobs")
	for _, id := range jobIDs {
		units = append(units, fmt.Sprintf("job:%d", id))
	}
	sc.dispatchWorkflows(n, func(i int) (*builder.Builder, queuety.State) {
		return builder.Workflow("chaos_late").Then(hNever).MustCompleteWithin(0, 0, 0, 1).OnDeadline(hLate),
			queuety.State{"key": fmt.Sprintf("late-%d", i)}
	})
	for i := range n {
		cbUnits = append(cbUnits, lateTag(fmt.Sprintf("late-%d", i)))
	}
	units = append(units, cbUnits...)
	ok, err := waitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
		n2, err := sc.count(`SELECT COUNT(*) FROM %squeuety_workflows WHERE status = 'running' AND deadline_at < ` + sc.utcNow())
		return n2 == n, err
	})
	require.True(t, ok, "the workflows did not all pass their deadline (last error: %v)", err)

	// The workers sweep deadlines at start and then every 500 ms, so every
	// callback is enqueued within a second of the start.
	cfg := sc.workerConfig(sc.s.StaleTimeout)
	cfg.Deadlines, cfg.CallbackSleep = 500*time.Millisecond, sc.s.CallbackSleep
	started := time.Now()
	sc.startWorkers(sc.s.Workers, cfg)
	ok, err = waitFor(sc.s.Timeout, 20*time.Millisecond, func() (bool, error) {
		got, err := sc.countRuns(`SELECT COUNT(*) FROM chaos_runs WHERE handler IN (?, ?)`, hThen, hLate)
		return got >= 2*n, err
	})
	require.True(t, ok, "the callbacks did not all start within %s (last error: %v)", sc.s.Timeout, err)

	// Kill every worker running a callback, while each callback sleeps.
	running, err := sc.idsIn(sc.runs, `SELECT DISTINCT pid FROM chaos_runs WHERE handler IN ('`+hThen+`', '`+hLate+`')`)
	require.NoError(t, err)
	busy := map[int]bool{}
	for _, pid := range running {
		busy[int(pid)] = true
	}
	var killed []string
	for _, p := range sc.fleet.running("worker") {
		if !busy[p.pid] {
			continue
		}
		sc.fleet.sigkill(p)
		sc.res.Kills++
		killed = append(killed, fmt.Sprintf("%s (pid %d)", p.name, p.pid))
		_, err := sc.fleet.start("worker", cfg)
		require.NoError(t, err)
	}
	require.NotEmpty(t, killed, "no worker was running a callback")
	// Every callback began after the workers started, so each was still
	// running when its worker was killed if the kills came within one
	// callback's duration of the start. On a loaded machine some may come
	// later: the checks below go by each run's start and its worker's kill.
	if took := time.Since(started); took >= sc.s.CallbackSleep {
		t.Logf("the SIGKILLs came %s after the workers started, after a callback's %s: callbacks that ended before are expected to run once",
			took.Round(time.Millisecond), sc.s.CallbackSleep)
	}
	t.Logf("SIGKILLed %s while they ran the %d callbacks", strings.Join(killed, ", "), 2*n)

	// Every callback job ends: completed, or buried if the crash lost it.
	ok, err = waitFor(sc.s.Timeout, 100*time.Millisecond, func() (bool, error) {
		open, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler IN (?, ?) AND status IN ('pending', 'processing')`, hThen, hLate)
		if err != nil {
			return false, err
		}
		all, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler IN (?, ?)`, hThen, hLate)
		return open == 0 && all >= 2*n, err
	})
	if !ok {
		t.Errorf("the callback jobs did not all end within %s (last error: %v)", sc.s.Timeout, err)
	}
	buried, err := sc.ids(`SELECT id FROM %squeuety_jobs WHERE handler IN ('` + hThen + `', '` + hLate + `') AND status <> 'completed'`)
	require.NoError(t, err)
	assert.Empty(t, buried, "callback jobs that never completed after the crash: %v", buried)
	slowest := sc.stopWorkers()
	sc.res.note("slowest worker exit after SIGTERM: %s", slowest.Round(time.Millisecond))
	sc.finish(units)

	// Each callback ran twice: first on a killed worker, then once to its
	// end on another.
	runs, err := loadRuns(sc.ctx, sc.runs)
	require.NoError(t, err)
	kills := sc.fleet.killTimes()
	byUnit := map[string][]run{}
	for _, r := range runs {
		if strings.HasPrefix(r.tag, "cb:") {
			byUnit[r.unit()] = append(byUnit[r.unit()], r)
		}
	}
	again, cut := 0, 0
	for _, u := range cbUnits {
		rs := byUnit[u]
		if !assert.NotEmpty(t, rs, "%s: never ran", u) {
			continue
		}
		switch callbackKill(rs[0], kills, sc.s.CallbackSleep) {
		case killedAfter:
			// Its worker was killed after the callback had ended: one run.
			assert.Len(t, rs, 1, "%s: runs (the callback ended before its worker was killed)", u)
			continue
		case killedNear:
			// Killed as the callback ended: its completion may or may
			// not have committed, so a second run is allowed, not required.
			if len(rs) == 1 {
				continue
			}
		case killedRunning:
			cut++
		}
		if !assert.Len(t, rs, 2, "%s: runs (one cut short by the SIGKILL, one after it)", u) {
			continue
		}
		_, firstKilled := kills[rs[0].pid]
		_, secondKilled := kills[rs[1].pid]
		assert.True(t, firstKilled, "%s: the first run's worker (pid %d) was SIGKILLed", u, rs[0].pid)
		assert.False(t, secondKilled, "%s: the second run's worker (pid %d) was not", u, rs[1].pid)
		if firstKilled && !secondKilled {
			again++
		}
	}
	assert.Positive(t, cut, "no callback was running when its worker was killed: raise QUEUETY_CHAOS_CALLBACK_SLEEP")
	cbJobs, err := sc.count(`SELECT COUNT(*) FROM %squeuety_jobs WHERE handler IN (?, ?)`, hThen, hLate)
	require.NoError(t, err)
	assert.Equal(t, 2*n, cbJobs, "callback jobs enqueued: one per batch and one per workflow")
	sc.res.note("%d then and %d deadline callbacks of %s each; %d SIGKILLs mid-callback; %d of the %d ran again, once, on another worker",
		n, n, sc.s.CallbackSleep, len(killed), again, 2*n)
	sc.assertHung()
}

// callbackKillTiming is when a callback run's worker was killed, against
// the run: while the callback ran, as it ended (within callbackEndGrace
// after its sleep, before its completion surely committed), after it had
// ended, or not at all.
type callbackKillTiming int

const (
	notKilled callbackKillTiming = iota
	killedRunning
	killedNear
	killedAfter
)

// callbackEndGrace is how long after a callback's sleep its completion is
// taken to have committed.
const callbackEndGrace = 2 * time.Second

// callbackKill says when r's worker was killed (kills: the fleet's kill
// times by pid), for callbacks that sleep for sleep.
func callbackKill(r run, kills map[int]time.Time, sleep time.Duration) callbackKillTiming {
	at, ok := kills[r.pid]
	switch {
	case !ok:
		return notKilled
	case at.Before(r.startedAt.Add(sleep)):
		return killedRunning
	case at.Before(r.startedAt.Add(sleep + callbackEndGrace)):
		return killedNear
	default:
		return killedAfter
	}
}
