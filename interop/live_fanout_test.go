package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// liveScenarios are the driver's scenarios (interop/php/README.md) that
// run to an end on their own. child_fail is left out: PHP leaves its
// parent running for ever, the Go engine fails it (see
// TestPHPRunWorkflow).
var liveScenarios = []string{
	"fe_all", "fe_reduce", "fe_first", "fe_quorum",
	"repeat_until", "repeat_while_cond", "repeat_max",
	"child", "start_group", "wait_ids",
}

// liveSide is one table prefix with a Go client (real clock) and the PHP
// driver on it.
type liveSide struct {
	t      *testing.T
	ctx    context.Context
	c      *queuety.Client
	php    *livePHP
	prefix string
}

func newLiveSide(t *testing.T) *liveSide {
	t.Helper()
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix) // skips before anything is created
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &liveSide{t: t, ctx: ctx, c: c, php: php, prefix: prefix}
}

// goWorker returns a Go worker with the scenario handlers on queues.
func (s *liveSide) goWorker(gate fanGate, opts ...worker.Option) *worker.Worker {
	base := []worker.Option{worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler))}
	w := worker.New(s.c, append(base, opts...)...)
	registerFan(w, nil, gate)
	return w
}

// goRun drains the due jobs with a Go worker, one at a time.
func (s *liveSide) goRun() worker.Stats {
	s.t.Helper()
	st, err := s.goWorker(nil, worker.Concurrency(1)).RunOnce(s.ctx, 20*time.Second)
	require.NoError(s.t, err, "Go worker")
	return st
}

// phpDispatch dispatches a scenario with Queuety's builder (the driver)
// and returns the workflow ids it printed.
func (s *liveSide) phpDispatch(scenario string, args ...string) []int64 {
	s.t.Helper()
	var out struct {
		WorkflowIDs []int64 `json:"workflow_ids"`
	}
	s.php.runJSON(&out, append([]string{"dispatch", scenario}, args...)...)
	require.NotEmpty(s.t, out.WorkflowIDs, "dispatch %s", scenario)
	return out.WorkflowIDs
}

// goDispatch dispatches a scenario with the Go builder, with the driver's
// default payload (wait_ids first dispatches its two wait_dep workflows,
// as the driver does).
func (s *liveSide) goDispatch(scenario string) int64 {
	s.t.Helper()
	state := defaultPayload(scenario)
	if scenario == "wait_ids" {
		var deps []int64
		for n := 1; n <= 2; n++ {
			id, err := goScenario("wait_dep").Dispatch(s.ctx, s.c, queuety.State{"n": n})
			require.NoError(s.t, err)
			deps = append(deps, id)
		}
		state = queuety.State{"dep_ids": deps}
	}
	id, err := goScenario(scenario).Dispatch(s.ctx, s.c, state)
	require.NoError(s.t, err, "dispatch %s", scenario)
	return id
}

// liveView is what PHP reports about a prefix: job and workflow counts by
// status (the driver's stats) and Queuety::workflow_status() of every
// workflow (the driver's status: status, current step, public state,
// wait details, ...), as JSON by workflow id.
type liveView struct {
	Stats struct {
		Jobs      map[string]int `json:"jobs"`
		Workflows map[string]int `json:"workflows"`
	}
	Status map[int64]string
}

func (s *liveSide) view() liveView {
	s.t.Helper()
	var v liveView
	s.php.runJSON(&v.Stats, "stats")
	total := 0
	for _, n := range v.Stats.Workflows {
		total += n
	}
	v.Status = map[int64]string{}
	for id := int64(1); id <= int64(total); id++ {
		v.Status[id] = s.php.run("status", strconv.FormatInt(id, 10))
	}
	return v
}

// sameView asserts that two prefixes ended in the same place.
func sameView(t *testing.T, what string, want, got liveView) {
	t.Helper()
	assert.Equal(t, want.Stats.Jobs, got.Stats.Jobs, "%s: jobs by status", what)
	assert.Equal(t, want.Stats.Workflows, got.Stats.Workflows, "%s: workflows by status", what)
	require.Equal(t, len(want.Status), len(got.Status), "%s: workflows", what)
	for id, w := range want.Status {
		assert.True(t, jsonEqual(w, got.Status[id]), "%s: workflow %d status\n  want %s\n  got  %s", what, id, w, got.Status[id])
	}
}

// terminal checks that every workflow ended.
func terminal(t *testing.T, what string, v liveView) {
	t.Helper()
	for id, st := range v.Status {
		var s struct {
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(st), &s))
		assert.Contains(t, []string{"completed", "failed"}, s.Status, "%s: workflow %d did not end: %s", what, id, st)
	}
}

// TestLivePHPDispatchGoRuns: PHP dispatches each scenario with Queuety's
// builder, Go workers run it to the end; the result, as PHP reads it back,
// is what PHP alone reaches on another prefix (dispatch, then work).
func TestLivePHPDispatchGoRuns(t *testing.T) {
	t.Parallel()
	for _, sc := range liveScenarios {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			goSide, phpSide := newLiveSide(t), newLiveSide(t)
			goSide.phpDispatch(sc)
			goSide.goRun()
			phpSide.phpDispatch(sc)
			phpSide.php.run("work")
			want, got := phpSide.view(), goSide.view()
			terminal(t, "PHP alone", want)
			sameView(t, sc+": run by Go vs PHP alone", want, got)
		})
	}
}

// TestLiveGoDispatchPHPRuns: Go dispatches each scenario with the Go
// builder (same names, handlers and options as the driver's), PHP's
// worker runs it to the end; the result is what Go alone reaches on
// another prefix.
func TestLiveGoDispatchPHPRuns(t *testing.T) {
	t.Parallel()
	for _, sc := range liveScenarios {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			phpSide, goSide := newLiveSide(t), newLiveSide(t)
			phpSide.goDispatch(sc)
			phpSide.php.run("work")
			goSide.goDispatch(sc)
			goSide.goRun()
			want, got := goSide.view(), phpSide.view()
			terminal(t, "Go alone", want)
			sameView(t, sc+": run by PHP vs Go alone", want, got)
		})
	}
}

// TestLiveMixedFleet runs a 20-item for_each and a start_group with five
// children, both dispatched by PHP, on a Go worker and PHP worker
// processes at the same time. Every branch result is recorded once, the
// for_each step settles once, the group wait resumes once, and both
// workflows complete.
func TestLiveMixedFleet(t *testing.T) {
	t.Parallel()
	s := newLiveSide(t)
	fe := s.phpDispatch("fe_all", `--payload={"count":20}`)[0]
	sg := s.phpDispatch("start_group", `--payload={"count":5}`)[0]
	// PHP starts: PlanItems of both and the first placeholder.
	var phpJobs atomic.Int64
	var first struct {
		Processed int64 `json:"processed"`
	}
	s.php.runJSON(&first, "work", "--max-jobs=3")
	phpJobs.Add(first.Processed)

	t.Cleanup(func() {
		if t.Failed() { // show where the fleet stopped, or what it left
			dumpRows(t, s.prefix)
		}
	})
	ctx, cancel := context.WithTimeout(s.ctx, 25*time.Second)
	defer cancel()
	var recovered atomic.Int64 // stranded waits the Go worker's sweep resumed
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The Go worker's handlers take a little time, so that PHP gets jobs.
	slow := func(hctx context.Context) error {
		select {
		case <-time.After(40 * time.Millisecond):
		case <-hctx.Done():
		}
		return nil
	}
	// Queuety PHP's commits wake no Go worker: a mixed fleet sets the idle
	// poll interval to how soon Go must see PHP's jobs.
	//
	// The Go worker runs the workflow-waits sweep every 200 ms (its other
	// sweeps off): Queuety PHP sets the group wait up reading the children
	// without row locks, so a child that ends meanwhile (in Go or PHP) can
	// miss the wait, which then commits as waiting with every child ended.
	// The sweep resumes such a wait, once, within the time limit.
	w := worker.New(s.c, worker.WithLogger(slog.New(slog.DiscardHandler)), worker.NoRetention(),
		worker.Maintenance(worker.Intervals{WaitTimer: 200 * time.Millisecond, Deadlines: -1, Watchdog: -1, Stale: -1, ScheduleIdle: -1}),
		worker.Concurrency(4), worker.PollInterval(20*time.Millisecond), worker.IdlePollInterval(20*time.Millisecond),
		worker.WithHooks(worker.Hooks{Swept: func(task string, n int, _ error) {
			if task == deadline.SweepWorkflowWaits {
				recovered.Add(int64(n))
			}
		}}))
	registerFan(w, nil, slow)
	runCtx, stopGo := context.WithCancel(ctx)
	wg.Add(1)
	var goErr error
	go func() {
		defer wg.Done()
		goErr = w.Run(runCtx)
	}()
	var phpErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := s.php.exec(s.php.script, "work", "--max-jobs=4")
			if err != nil {
				phpErr = err
				return
			}
			var r struct {
				Processed int64 `json:"processed"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				phpErr = fmt.Errorf("php work printed %q: %w", out, err)
				return
			}
			phpJobs.Add(r.Processed)
			if r.Processed == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()

	done := func() bool {
		for _, id := range []int64{fe, sg} {
			wf, err := s.c.Workflow(s.ctx, id)
			if err != nil || wf.Status != queuetytype.WorkflowCompleted {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	stopGo()
	wg.Wait()
	require.NoError(t, goErr, "Go worker")
	require.NoError(t, phpErr, "PHP worker")
	require.True(t, done(), "both workflows completed within the time limit")
	goJobs := w.Stats().Succeeded
	t.Logf("jobs run: Go %d, PHP %d; stranded waits recovered: %d", goJobs, phpJobs.Load(), recovered.Load())
	assert.Positive(t, goJobs, "jobs the Go worker ran")
	assert.Positive(t, phpJobs.Load(), "jobs PHP ran")

	db := testdb.Admin(t)
	q := func(query string, args ...any) []map[string]*string {
		var out []map[string]*string
		for _, r := range queryRows(t, db, fmt.Sprintf(query, s.prefix), args...) {
			out = append(out, r)
		}
		return out
	}
	// Every job ran once and completed.
	var stats struct {
		Jobs      map[string]int `json:"jobs"`
		Workflows map[string]int `json:"workflows"`
	}
	s.php.runJSON(&stats, "stats")
	assert.Equal(t, map[string]int{"completed": 2 + 5}, stats.Workflows, "workflows by status")
	jobs := q("SELECT id, handler, status, attempts FROM `%squeuety_jobs` ORDER BY id")
	branches := 0
	for _, j := range jobs {
		assert.Equal(t, "completed", val(j["status"]), "job %s (%s)", val(j["id"]), val(j["handler"]))
		assert.Equal(t, "1", val(j["attempts"]), "job %s (%s) attempts", val(j["id"]), val(j["handler"]))
		if val(j["handler"]) == hDoubleItem {
			branches++
		}
	}
	assert.Equal(t, 20, branches, "branch jobs")
	// One 'completed' log row per branch job; who ran it shows in
	// memory_peak_kb (PHP's worker measures it, Go writes NULL).
	byGo, byPHP := 0, 0
	perJob := map[string]int{}
	for _, l := range q("SELECT job_id, memory_peak_kb FROM `%squeuety_logs` WHERE handler = ? AND event = 'completed'", hDoubleItem) {
		perJob[val(l["job_id"])]++
		if l["memory_peak_kb"] == nil {
			byGo++
		} else {
			byPHP++
		}
	}
	assert.Len(t, perJob, 20, "branch jobs with a 'completed' log row")
	for j, n := range perJob {
		assert.Equal(t, 1, n, "'completed' log rows of branch job %s", j)
	}
	t.Logf("branches run: Go %d, PHP %d", byGo, byPHP)

	// The for_each step settled once, with every item's result once.
	count := func(query string, args ...any) int {
		return len(q(query, args...))
	}
	assert.Equal(t, 20, count("SELECT id FROM `%squeuety_workflow_events` WHERE workflow_id = ? AND step_index = 1 AND event = 'step_item_completed'", fe), "step_item_completed events")
	assert.Equal(t, 1, count("SELECT id FROM `%squeuety_workflow_events` WHERE workflow_id = ? AND step_index = 1 AND event = 'step_completed'", fe), "step_completed events of the for_each step")
	assert.Equal(t, 1, count("SELECT id FROM `%squeuety_jobs` WHERE workflow_id = ? AND handler = ?", fe, hFinish), "Finish jobs of fe_all")
	var st struct {
		State struct {
			Doubled struct {
				Succeeded int `json:"succeeded"`
				Results   []struct {
					Index  int `json:"index"`
					Output struct {
						Value int `json:"value"`
					} `json:"output"`
				} `json:"results"`
			} `json:"doubled"`
		} `json:"state"`
	}
	s.php.runJSON(&st, "status", strconv.FormatInt(fe, 10))
	assert.Equal(t, 20, st.State.Doubled.Succeeded, "aggregate: succeeded")
	var idx []int
	for _, r := range st.State.Doubled.Results {
		idx = append(idx, r.Index)
		assert.Equal(t, 2*(r.Index+1), r.Output.Value, "result of item %d", r.Index)
	}
	sort.Ints(idx)
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, idx, "aggregate: item indexes, each once")

	// The group wait resumed once, with the five children's results.
	assert.Equal(t, 1, count("SELECT id FROM `%squeuety_workflow_events` WHERE workflow_id = ? AND event = 'workflow_resumed'", sg), "workflow_resumed events of start_group")
	assert.Equal(t, 1, count("SELECT id FROM `%squeuety_jobs` WHERE workflow_id = ? AND handler = ?", sg, hFinish), "Finish jobs of start_group")
	var sgs struct {
		State struct {
			KidResults map[string]json.RawMessage `json:"kid_results"`
		} `json:"state"`
	}
	s.php.runJSON(&sgs, "status", strconv.FormatInt(sg, 10))
	assert.Len(t, sgs.State.KidResults, 5, "kid_results")
	assert.Zero(t, count("SELECT waiting_workflow_id FROM `%squeuety_workflow_dependencies`"), "workflow_dependencies rows left")
}

// dumpRows logs the workflow, job and event rows of prefix.
func dumpRows(t *testing.T, prefix string) {
	db := testdb.Admin(t)
	for _, q := range []string{
		"SELECT id, status, current_step, total_steps, parent_workflow_id, parent_step_index FROM `%squeuety_workflows` ORDER BY id",
		"SELECT id, handler, workflow_id, step_index, status, attempts, created_at, available_at, reserved_at, completed_at, error_message FROM `%squeuety_jobs` ORDER BY id",
		"SELECT id, workflow_id, step_index, event, job_id FROM `%squeuety_workflow_events` ORDER BY id",
	} {
		for _, r := range queryRows(t, db, fmt.Sprintf(q, prefix)) {
			t.Log(show(r))
		}
	}
}
