package interop_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// fanRun says what one Go worker pass over the fixture's rows may run.
type fanRun struct {
	// queues to claim from (default "default").
	queues []string
	// only limits the step and branch handlers registered (see
	// registerFan); the worker claims no job it has no handler for.
	only []string
	// stop > 0 ends the pass after that many step and branch handler
	// calls: the last one stops the claiming when it starts, so no job
	// runs after it. It is the worker's equivalent of that many PHP
	// run_worker(queue, true) calls, which take one job each. Internal
	// placeholders are not counted: they run whenever they are due.
	stop int
	// thenPlaceholders lets the placeholders that become due after the
	// last call run too: the pass then ends at the next step or branch job
	// claimed, which is handed back untouched (attempts and reserved_at as
	// before, no row written).
	thenPlaceholders bool
}

// fan runs one Go worker pass (one job at a time) with the scenario
// handlers, recording the step and branch inputs in rec.
func (e *env) fan(rec *recorder, r fanRun) worker.Stats {
	e.t.Helper()
	queues := r.queues
	if len(queues) == 0 {
		queues = []string{"default"}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var calls atomic.Int64
	gate := func(hctx context.Context) error {
		if r.stop == 0 {
			return nil
		}
		n := calls.Add(1)
		switch {
		case n == int64(r.stop) && !r.thenPlaceholders:
			// The last call: claim nothing more. (Stopping only at the
			// next claim would race with the batch completer, which
			// records this call's success while the next job is claimed.)
			cancel()
		case n > int64(r.stop):
			// Stop claiming, then wait for the worker to cancel this
			// attempt as a shutdown: it hands the job back without using
			// an attempt and writes no row.
			cancel()
			<-hctx.Done()
			return context.Cause(hctx)
		}
		return nil
	}
	w := e.worker(worker.Queues(queues...), worker.ShutdownTimeout(20*time.Millisecond))
	registerFan(w, rec, gate, r.only...)
	st, err := w.RunOnce(ctx, time.Minute)
	require.NoError(e.t, err, "RunOnce")
	require.LessOrEqual(e.t, st.HandedBack, int64(1), "jobs handed back: %+v", st)
	return st
}

// maxEventID returns the highest workflow_events id in the database.
func (e *env) maxEventID() int {
	e.t.Helper()
	last := 0
	for _, ev := range e.rows("queuety_workflow_events") {
		id, err := strconv.Atoi(val(ev["id"]))
		require.NoError(e.t, err)
		last = max(last, id)
	}
	return last
}

// fanExpect runs fan, then compares the tables with want and the step and
// branch handlers' inputs with want's step_started events written during
// the run.
func (e *env) fanExpect(r fanRun, want *phpfixture.Snapshot) {
	e.t.Helper()
	since := e.maxEventID()
	rec := &recorder{}
	e.fan(rec, r)
	e.compareWith(want)
	starts := 0
	for _, ev := range rowsOf(want, "queuety_workflow_events") {
		id, _ := strconv.Atoi(val(ev["id"]))
		if id > since && val(ev["event"]) == "step_started" && !engine.IsInternalHandler(val(ev["handler"])) {
			starts++
		}
	}
	if starts == 0 {
		assert.Empty(e.t, rec.handlers(), "handlers called; PHP started no step here")
		return
	}
	checkInputs(e.t, rec, want, since)
}

// goBranchAttempts adjusts PHP's branch jobs (handler) to the attempts a
// Go worker gives them. PHP's for_each placeholder reads DoubleItem's
// config() (max_attempts 2) and writes it into each branch job's
// max_attempts and __queuety_runtime; a Go worker has no PHP class to ask,
// so branches (and children) it dispatches take the attempts of the
// builder's step options, here none, so the workflow's 3.
func goBranchAttempts(t *testing.T, s *phpfixture.Snapshot, handler string, attempts int) {
	t.Helper()
	n := strconv.Itoa(attempts)
	for _, j := range rowsOf(s, "queuety_jobs") {
		if val(j["handler"]) != handler {
			continue
		}
		p := val(j["payload"])
		i := strings.Index(p, `"__queuety_runtime":{"max_attempts":`)
		require.GreaterOrEqual(t, i, 0, "job %s payload %s", val(j["id"]), p)
		rest := p[i+len(`"__queuety_runtime":{"max_attempts":`):]
		end := strings.IndexAny(rest, ",}")
		j["payload"] = str(p[:len(p)-len(rest)] + n + rest[end:])
		j["max_attempts"] = str(n)
	}
}

// oneCompletedLog drops PHP's second 'completed' log row of each job of
// handler. PHP writes two for some placeholders (the step's completion
// path writes one and the worker another); the Go engine writes one,
// because the job completed once.
func oneCompletedLog(s *phpfixture.Snapshot, handler string) {
	var logs []phpfixture.Row
	seen := map[string]bool{}
	for _, r := range rowsOf(s, "queuety_logs") {
		if val(r["handler"]) == handler && val(r["event"]) == "completed" {
			if seen[val(r["job_id"])] {
				continue
			}
			seen[val(r["job_id"])] = true
		}
		logs = append(logs, r)
	}
	setRows(s, "queuety_logs", logs)
}

// dispatchGo dispatches a scenario with the Go builder at the clock time of
// the snapshot that shows PHP's dispatch of it.
func (e *env) dispatchGo(scenario string, state queuety.State, at *phpfixture.Snapshot) int64 {
	e.t.Helper()
	e.clock.Set(at.Now())
	id, err := goScenario(scenario).Dispatch(e.ctx, e.c, state)
	require.NoError(e.t, err, "dispatch %s", scenario)
	return id
}

// TestPHPForEachAll runs l_for_each_all (for_each mode all, three items)
// from PHP's dispatch on Go workers, in PHP's steps: PlanItems and the
// __queuety_for_each placeholder (_for_each_steps keyed "1", one branch
// job per item with __for_each in its payload, cost_units 1, a
// step_started event and no step_completed for the placeholder), one
// branch (results, winner_index, "settled":false, step_item_completed),
// then the rest (the aggregate under "doubled", step_completed with the
// last branch's job, the Finish job, _for_each_steps kept).
func TestPHPForEachAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "l_for_each_all.json")
	e.load("dispatched")
	for _, step := range []struct {
		run   fanRun
		label string
	}{
		{fanRun{only: []string{hPlanItems}}, "branches dispatched"},
		{fanRun{stop: 1}, "after the first branch"},
		{fanRun{}, "completed"},
	} {
		want := clone(e.snap(step.label))
		goBranchAttempts(t, want, hDoubleItem, 3)
		e.fanExpect(step.run, want)
	}
}

// TestPHPForEachQuorumReducer runs m_for_each_quorum_reducer (quorum 2,
// reducer SumReducer; item 0 always fails). The expansion is checked from
// PHP's dispatch; from PHP's branch jobs on (max_attempts 2 from
// DoubleItem::config()), a Go worker fails item 0's attempt 1 (retry due
// 60 s later, step_failed, _for_each_steps untouched), buries it at
// attempt 2 (its entry in failures, a 'buried' log row and no
// workflow_failed: the quorum is still reachable), and the two successes
// settle the step (results as an object {"1","2"}, the reducer's
// {"sum":10,"count":2} merged after "summary", overwriting count in place).
func TestPHPForEachQuorumReducer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "m_for_each_quorum_reducer.json")
	e.load("dispatched")
	want := clone(e.snap("branches dispatched"))
	goBranchAttempts(t, want, hDoubleItem, 3)
	e.fanExpect(fanRun{only: []string{hPlanItems}}, want)

	e.load("branches dispatched")
	e.fanExpect(fanRun{stop: 1}, e.snap("item 0 attempt 1 failed"))
	failedAt := e.clock.Now()
	due := parseTime(t, one(t, e.rows("queuety_jobs"), "id", "3")["available_at"])
	assert.WithinDuration(t, failedAt.Add(60*time.Second), due, 0, "retry due time: failure time %s + 60s", failedAt)
	// PHP's fixture made the retry due by SQL; here the clock moves. But
	// the Go claim orders by priority, then available_at, then id, and
	// PHP's by priority, then id: PHP took the retry (job 3) before the
	// branches 4 and 5, which had been due longer. So that the Go worker
	// takes the jobs in PHP's order, the retry's due time is set to theirs
	// (available_at is compared only as NULL or not).
	e.clock.Advance(60 * time.Second)
	_, err := e.db.Exec("UPDATE `" + e.prefix + "queuety_jobs` SET available_at = (SELECT a FROM (SELECT MIN(available_at) AS a FROM `" +
		e.prefix + "queuety_jobs` WHERE id IN (4, 5)) AS x) WHERE id = 3")
	require.NoError(t, err)
	e.fanExpect(fanRun{stop: 1}, e.snap("item 0 failed for good"))
	e.fanExpect(fanRun{}, e.snap("completed"))
}

// TestPHPForEachFirstSuccess runs m2_for_each_first_success: item 0 fails
// and waits for its retry, item 1 succeeds and settles the step at once,
// burying the waiting retry and the branch that never ran ('For-each
// completion settled early.', no log or event rows) in the same
// transaction; the Finish job follows.
func TestPHPForEachFirstSuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "m2_for_each_first_success.json")
	e.load("dispatched")
	want := clone(e.snap("branches dispatched"))
	goBranchAttempts(t, want, hDoubleItem, 3)
	e.fanExpect(fanRun{only: []string{hPlanItems}}, want)

	e.load("branches dispatched")
	e.fanExpect(fanRun{stop: 1}, e.snap("item 0 attempt 1 failed"))
	e.fanExpect(fanRun{stop: 1}, e.snap("item 1 succeeded"))
	e.fanExpect(fanRun{}, e.snap("completed"))
}

// TestPHPForEachAllFailure runs m3_for_each_all_failure from PHP's rows
// after item 1's first failed attempt: its second attempt is terminal, the
// branch is buried and mode all fails the workflow in the same transaction
// with the branch's message (logs 'buried' then 'workflow_failed' with the
// branch's job_id; only a step_failed event; no aggregate).
func TestPHPForEachAllFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "m3_for_each_all_failure.json")
	e.load("after item 1 attempt 1 failed")
	// PHP's fixture made the retry due by SQL; here the clock moves.
	e.clock.Advance(60 * time.Second)
	e.fanExpect(fanRun{}, e.snap("failed"))
}

// TestPHPRepeat runs n_repeat. A (repeat_until counter == 3) from PHP's
// dispatch: Increment and the __queuety_repeat placeholder (_repeat_steps
// {"1":{"iterations":1}}, a new Increment job, current_step back to 0),
// then to the end. B and C are dispatched with the Go builder on the same
// rows, as the fixture's PHP code dispatched them, and run to the end: B
// fails at max_iterations 2 (repeat job buried at attempt 1 with
// WorkflowConstraintViolationException), C repeats until the registered
// condition CounterReached holds.
func TestPHPRepeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "n_repeat.json")
	e.load("A dispatched")
	e.fanExpect(fanRun{stop: 1, thenPlaceholders: true}, e.snap("A after inc and the first repeat evaluation"))
	e.fanExpect(fanRun{}, e.snap("A completed"))

	b := clone(e.snap("B failed at max_iterations"))
	assert.Equal(t, int64(2), e.dispatchGo("repeat_max", queuety.State{"keep_going": true}, b), "B's workflow id")
	e.fanExpect(fanRun{}, b)

	c := clone(e.snap("C completed"))
	assert.Equal(t, int64(3), e.dispatchGo("repeat_while_cond", queuety.State{"limit": 3}, c), "C's workflow id")
	e.fanExpect(fanRun{}, c)
}

// TestPHPRunWorkflow runs o_run_workflow from PHP's dispatch: PlanItems and
// the __queuety_run_workflow placeholder insert the child (parent_workflow_id,
// parent_step_index, the parent's public state then _steps, _queue,
// _priority, _max_attempts, no _definition_hash; its workflow_started log
// before the placeholder's completed log); the child's completion copies
// its public keys into the parent, which goes on to Finish with no log or
// event for the resume. Then a child that fails, dispatched with the Go
// builder.
func TestPHPRunWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "o_run_workflow.json")
	e.load("dispatched")
	e.fanExpect(fanRun{only: []string{hPlanItems}}, e.snap("child dispatched, parent parked"))

	want := clone(e.snap("completed"))
	goFreshFinishInput(t, want)
	e.fanExpect(fanRun{}, want)

	// The failing child: dispatched by Go, PlanItems and the placeholder
	// run first.
	failing := e.snap("failing child")
	assert.Equal(t, int64(3), e.dispatchGo("child_fail", queuety.State{"n": 4}, failing), "parent's workflow id")
	e.fan(&recorder{}, fanRun{only: []string{hPlanItems}})
	// PHP's placeholder gave the child's job FailStep::config()'s
	// max_attempts 1; Go's gives the child definition's (3). Write PHP's
	// value, so that the child fails for good at attempt 1 as in PHP.
	child := one(t, e.rows("queuety_jobs"), "handler", hFailStep)
	require.Equal(t, `{"__queuety_runtime":{"max_attempts":3}}`, val(child["payload"]), "Go child job payload")
	_, err := e.db.Exec("UPDATE `"+e.prefix+"queuety_jobs` SET max_attempts = 1, payload = ? WHERE id = ?",
		`{"__queuety_runtime":{"max_attempts":1}}`, val(child["id"]))
	require.NoError(t, err)
	e.fan(&recorder{}, fanRun{})

	want = clone(failing)
	goFreshFinishInput(t, want)
	goChildFailure(t, want, "3", "4")
	e.compareWith(want)
}

// goChildFailure adjusts PHP's rows for a run_workflow child that failed:
// PHP leaves the parent 'running' at the run_workflow step, waiting
// forever; the Go engine fails the parent in the child's failing
// transaction with "Child workflow <child> failed: <child's error>".
func goChildFailure(t *testing.T, s *phpfixture.Snapshot, parent, child string) {
	t.Helper()
	wf := one(t, rowsOf(s, "queuety_workflows"), "id", parent)
	cwf := one(t, rowsOf(s, "queuety_workflows"), "id", child)
	require.Equal(t, "running", val(wf["status"]), "PHP's parent")
	wf["status"] = str("failed")
	wf["failed_at"] = str("set")
	wf["error_message"] = str("Child workflow " + child + " failed: " + val(cwf["error_message"]))
	// It logs the parent's workflow_failed (job_id 0, empty handler, no
	// workflow_events row) before the child's own workflow_failed row.
	var logs []phpfixture.Row
	for _, r := range rowsOf(s, "queuety_logs") {
		if val(r["event"]) == "workflow_failed" && val(r["workflow_id"]) == child {
			logs = append(logs, phpfixture.Row{
				"id": str("0"), "job_id": str("0"), "workflow_id": str(parent), "step_index": nil, "handler": str(""),
				"queue": r["queue"], "event": str("workflow_failed"), "attempt": nil, "duration_ms": nil,
				"memory_peak_kb": nil, "error_message": wf["error_message"], "error_class": nil, "error_trace": nil,
				"context": nil, "created_at": str("set"),
			})
		}
		logs = append(logs, r)
	}
	setRows(s, "queuety_logs", logs)
}

// TestPHPStartWorkflowsGroup runs p_start_workflows_group from PHP's
// dispatch: PlanItems, __queuety_start_workflows (three top-level 'kid'
// workflows on queue kids with _started_by_*, child_ids and
// _workflow_groups, the budget delta not stored) and the
// __queuety_wait_for_workflows placeholder (workflow_dependencies rows,
// status waiting_for_workflows, _wait, step_started and workflow_waiting
// events); the first child sets satisfied_at on its row; the last resumes
// the parent (rows deleted, kid_results keyed by child id,
// workflow_resumed, the Finish job); then Finish.
func TestPHPStartWorkflowsGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "p_start_workflows_group.json")
	e.load("dispatched")
	// PHP's run_worker('default', true) calls stop between the start and
	// the wait placeholders; a Go worker runs every due placeholder, so it
	// goes straight to PHP's next snapshot.
	for _, step := range []struct {
		run   fanRun
		label string
	}{
		{fanRun{}, "parent waiting for the group"},
		{fanRun{queues: []string{"kids"}, stop: 1}, "after the first child"},
		{fanRun{queues: []string{"kids"}}, "parent resumed"},
		{fanRun{}, "completed"},
	} {
		want := clone(e.snap(step.label))
		oneCompletedLog(want, engine.HandlerStartWorkflows)
		e.fanExpect(step.run, want)
	}
}

// TestPHPWaitForWorkflows runs q_wait_for_workflows from PHP's dispatch:
// the waiter parks on dependencies 1 and 2 (mode any), the first
// dependency's completion resumes it (winner keyed by id, rows deleted),
// the second has no effect; then a waiter dispatched with the Go builder
// on an already completed workflow settles in its placeholder (winner not
// keyed, no dependency rows, workflow_resumed right after step_started).
func TestPHPWaitForWorkflows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "q_wait_for_workflows.json")
	e.load("dispatched")
	e.fanExpect(fanRun{}, e.snap("waiter waiting"))
	e.fanExpect(fanRun{queues: []string{"deps"}, stop: 1}, e.snap("waiter resumed by the first dependency"))
	e.fanExpect(fanRun{queues: []string{"default", "deps"}}, e.snap("completed"))

	settled := e.snap("waiter on an already completed workflow")
	assert.Equal(t, int64(4), e.dispatchGo("wait_ids", queuety.State{"dep_ids": []int64{1}}, settled), "waiter's id")
	e.fanExpect(fanRun{}, settled)
}

// TestGoDispatchMatchesPHPFanout dispatches each fan-out scenario with the
// Go builder on empty tables and compares the rows with PHP's dispatch:
// the _steps bytes of for_each, repeat, run_workflow, start_workflows and
// wait_for_workflows steps, _definition_hash, the first job and the
// workflow_started log.
func TestGoDispatchMatchesPHPFanout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fixture, label string
		dispatch       func(e *env)
	}{
		{"l_for_each_all.json", "dispatched", func(e *env) {
			e.dispatchGo("fe_all", queuety.State{"count": 3}, e.snap("dispatched"))
		}},
		{"m_for_each_quorum_reducer.json", "dispatched", func(e *env) {
			e.goDispatch(feBuilderNamed("fe_quorum_reduce", "summary", "quorum"), queuety.State{"count": 3, "fail_items": []int{1}})
		}},
		{"m2_for_each_first_success.json", "dispatched", func(e *env) {
			e.goDispatch(feBuilderNamed("fe_first", "doubled", "first"), queuety.State{"count": 3, "fail_items": []int{1}})
		}},
		{"n_repeat.json", "A dispatched", func(e *env) {
			e.dispatchGo("repeat_until", nil, e.snap("A dispatched"))
		}},
		{"o_run_workflow.json", "dispatched", func(e *env) {
			e.dispatchGo("child", queuety.State{"n": 4}, e.snap("dispatched"))
		}},
		{"p_start_workflows_group.json", "dispatched", func(e *env) {
			e.goDispatch(startGroupKidsQueue(), queuety.State{"count": 3})
		}},
		{"q_wait_for_workflows.json", "dispatched", func(e *env) {
			d1 := e.goDispatch(goScenario("wait_dep").OnQueue("deps"), queuety.State{"n": 1})
			d2 := e.goDispatch(goScenario("wait_dep").OnQueue("deps"), queuety.State{"n": 2})
			e.goDispatch(goScenario("wait_ids"), queuety.State{"dep_ids": []int64{d1, d2}})
		}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.fixture, ".json"), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.fixture)
			want := e.snap(tc.label)
			e.clock.Set(want.Now())
			tc.dispatch(e)
			e.compareWith(want)
		})
	}
}

// goDispatch dispatches b at the clock's current time.
func (e *env) goDispatch(b *builder.Builder, state queuety.State) int64 {
	e.t.Helper()
	id, err := b.Dispatch(e.ctx, e.c, state)
	require.NoError(e.t, err, "dispatch")
	return id
}

// goFreshFinishInput adjusts o_run_workflow's Finish step of workflow 1.
// PHP ran it within 2 s of the run_workflow placeholder in the same
// process, so Finish's step_started event (input and state_before), its
// step_completed input and its handler show the parent's state from
// Queuety's in-process cache, without the child's child_value and
// child_done; the step_completed state_before, read from the row, has
// them. The Go engine reads the row it locks, so Finish starts from that
// state.
func goFreshFinishInput(t *testing.T, s *phpfixture.Snapshot) {
	t.Helper()
	var fresh string
	for _, ev := range rowsOf(s, "queuety_workflow_events") {
		if val(ev["handler"]) == hFinish && val(ev["workflow_id"]) == "1" && val(ev["event"]) == "step_completed" {
			fresh = val(ev["state_before"])
		}
	}
	require.Contains(t, fresh, `"child_done":true`, "Finish's step_completed state_before")
	for _, ev := range rowsOf(s, "queuety_workflow_events") {
		if val(ev["handler"]) != hFinish || val(ev["workflow_id"]) != "1" {
			continue
		}
		require.NotContains(t, val(ev["input"]), "child_done", "PHP's stale Finish input")
		ev["input"] = str(fresh)
		if val(ev["event"]) == "step_started" {
			ev["state_before"] = str(fresh)
		}
	}
}
