package storetest

// Batched completions: one CompleteSteps call carrying for-each branches
// of several workflows (several of each, some stale, one settling its
// step), and single steps of several workflows with a failure among
// them. Each result must be recorded as if it had been recorded alone:
// a stale attempt never applies, a step settles once, on the branch that
// satisfies it, with every other branch of the batch completed first.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("ForEach/BatchedBranchesOfTwoWorkflowsOneStale", testForEachBatchedStale)
	register("ForEach/BatchedBranchesSettleOnceAndFallBackAlone", testForEachBatchedSettle)
	register("Workflow/BatchedStepsOfTwoWorkflowsAndAFailure", testStepsBatchedWithFailure)
	register("ForEach/LargeStateRecordedByTwoProcessesInTurn", testForEachLargeStateTwoProcesses)
}

// completeSteps records results with one CompleteSteps call.
func (e *Env) completeSteps(results ...*engine.Result) []error {
	e.T.Helper()
	errs, err := e.eng.CompleteSteps(e.Ctx, results)
	require.NoError(e.T, err, "complete steps")
	return errs
}

// success is a successful attempt of cj with out.
func (e *Env) success(cj *engine.Claimed, out queuety.State) *engine.Result {
	return &engine.Result{Claimed: cj, Output: out, StartedAt: e.Clock.Now()}
}

// branchesOf claims n branch jobs of handler and keys them by workflow
// and item index.
func (e *Env) branchesOf(handler string, n int) map[int64]map[int]*engine.Claimed {
	e.T.Helper()
	jobs := e.Claim(n, handler)
	require.Lenf(e.T, jobs, n, "claimed branch jobs of %s", handler)
	out := map[int64]map[int]*engine.Claimed{}
	for _, cj := range jobs {
		_, idx, ok := cj.ForEachItem()
		require.Truef(e.T, ok, "job %d is not a for-each branch", cj.Job.ID)
		if out[cj.Job.WorkflowID] == nil {
			out[cj.Job.WorkflowID] = map[int]*engine.Claimed{}
		}
		out[cj.Job.WorkflowID][idx] = cj
	}
	return out
}

// resultsByIndex returns the outputs of a settled aggregate's results by
// item index.
func resultsByIndex(t *testing.T, agg map[string]any) map[int64]map[string]any {
	out := map[int64]map[string]any{}
	for _, r := range asList(t, agg["results"], "results") {
		m := asMap(t, r, "result")
		out[m["index"].(int64)] = asMap(t, m["output"], "output")
	}
	return out
}

func testForEachBatchedStale(t *testing.T, e *Env) {
	b := builder.Workflow("batched_fan").ForEach("items", "item", builder.ResultKey("out")).Then("after")
	a := e.startB(b, queuety.State{"items": []any{"a0", "a1", "a2"}})
	c := e.startB(b, queuety.State{"items": []any{"c0", "c1"}})
	e.expandForEach()
	e.expandForEach()
	br := e.branchesOf("item", 5)
	require.Len(t, br[a], 3, "branches of the first workflow")
	require.Len(t, br[c], 2, "branches of the second workflow")

	// a0 is recorded alone first; the same attempt's second result, in
	// the batch, is stale and must not replace the first.
	require.NoError(t, e.completeSteps(e.success(br[a][0], queuety.State{"v": "first"}))[0], "a0 alone")
	errs := e.completeSteps(
		e.success(br[a][0], queuety.State{"v": "again"}),
		e.success(br[c][1], queuety.State{"v": "c1"}),
		e.success(br[a][1], queuety.State{"v": "a1"}),
		e.success(br[c][0], queuety.State{"v": "c0"}),
		e.success(br[a][2], queuety.State{"v": "a2"}),
	)
	assert.ErrorIs(t, errs[0], queuetytype.ErrStaleAttempt, "the repeated result of a0")
	for i, err := range errs[1:] {
		assert.NoErrorf(t, err, "result %d of the batch", i+1)
	}
	for _, id := range []int64{a, c} {
		wf := e.Workflow(id)
		assert.Equalf(t, 1, wf.CurrentStep, "workflow %d moved past the for-each step (status %s, error %q)", id, wf.Status, wf.ErrorMessage)
		assert.Equalf(t, queuetytype.WorkflowRunning, wf.Status, "workflow %d", id)
		assert.Equalf(t, 1, e.countEvents(id, driver.EventStepCompleted, 0), "step_completed events of workflow %d", id)
		for idx, cj := range br[id] {
			j := e.Job(cj.Job.ID)
			assert.Equalf(t, queuetytype.JobCompleted, j.Status, "branch %d of workflow %d (error %q)", idx, id, j.ErrorMessage)
		}
	}
	assert.Equal(t, 3, e.countEvents(a, driver.EventStepItemCompleted, 0), "item events of the first workflow")
	assert.Equal(t, 2, e.countEvents(c, driver.EventStepItemCompleted, 0), "item events of the second workflow")
	got := resultsByIndex(t, asMap(t, e.State(a)["out"], "first aggregate"))
	assert.Equal(t, map[int64]map[string]any{0: {"v": "first"}, 1: {"v": "a1"}, 2: {"v": "a2"}}, got, "first workflow's results")
	got = resultsByIndex(t, asMap(t, e.State(c)["out"], "second aggregate"))
	assert.Equal(t, map[int64]map[string]any{0: {"v": "c0"}, 1: {"v": "c1"}}, got, "second workflow's results")
	assert.Len(t, e.Claim(10, "after"), 2, "each workflow's next step enqueued once")
}

func testForEachBatchedSettle(t *testing.T, e *Env) {
	q := builder.Workflow("batched_quorum").ForEach("items", "vote", builder.Quorum(2), builder.ResultKey("votes")).Then("after")
	r := builder.Workflow("batched_reduced").ForEach("items", "vote", builder.Reducer("nowhere"), builder.Retry(3), builder.ResultKey("votes")).Then("after")
	qa := e.startB(q, queuety.State{"items": []any{0, 1, 2, 3}})
	ra := e.startB(r, queuety.State{"items": []any{0}})
	e.expandForEach()
	e.expandForEach()
	br := e.branchesOf("vote", 5)
	require.Len(t, br[qa], 4, "branches of the quorum workflow")
	require.Len(t, br[ra], 1, "branches of the reduced workflow")

	// The quorum settles on its second success; the third branch of the
	// batch arrives after the settling and is superseded. The reduced
	// workflow's only branch settles its step, whose reducer no worker
	// has: its attempt fails alone, and the quorum is still recorded.
	errs := e.completeSteps(
		e.success(br[qa][2], queuety.State{"v": 2}),
		e.success(br[ra][0], queuety.State{"v": 0}),
		e.success(br[qa][0], queuety.State{"v": 0}),
		e.success(br[qa][3], queuety.State{"v": 3}),
	)
	assert.NoError(t, errs[0], "first quorum branch")
	assert.NoError(t, errs[1], "reduced branch (its attempt failed and is retried)")
	assert.NoError(t, errs[2], "the settling branch")
	assert.ErrorIs(t, errs[3], queuetytype.ErrStaleAttempt, "the branch after the settling")

	wf := e.Workflow(qa)
	assert.Equal(t, 1, wf.CurrentStep, "the quorum settled (status %s, error %q)", wf.Status, wf.ErrorMessage)
	assert.Equal(t, 1, e.countEvents(qa, driver.EventStepCompleted, 0), "step_completed events of the quorum")
	assert.Equal(t, 2, e.countEvents(qa, driver.EventStepItemCompleted, 0), "item events of the quorum")
	for _, i := range []int{0, 2} {
		assert.Equalf(t, queuetytype.JobCompleted, e.Job(br[qa][i].Job.ID).Status, "quorum branch %d", i)
	}
	for _, i := range []int{1, 3} {
		j := e.Job(br[qa][i].Job.ID)
		assert.Equalf(t, queuetytype.JobBuried, j.Status, "quorum branch %d", i)
		assert.Equalf(t, "For-each completion settled early.", j.ErrorMessage, "quorum branch %d", i)
	}
	agg := asMap(t, e.State(qa)["votes"], "quorum aggregate")
	assert.Equal(t, map[int64]map[string]any{0: {"v": int64(0)}, 2: {"v": int64(2)}}, resultsByIndex(t, agg), "quorum results")
	assert.Equal(t, int64(2), asMap(t, agg["winner"], "winner")["index"], "the first recorded success wins")

	rw := e.Workflow(ra)
	assert.Equal(t, 0, rw.CurrentStep, "the reduced workflow did not settle")
	assert.Equal(t, queuetytype.WorkflowRunning, rw.Status, "reduced workflow (error %q)", rw.ErrorMessage)
	rj := e.Job(br[ra][0].Job.ID)
	assert.Equal(t, queuetytype.JobPending, rj.Status, "the reduced branch is retried (error %q)", rj.ErrorMessage)
	assert.Equal(t, 1, e.countEvents(ra, driver.EventStepFailed, 0), "the reduced branch's failed attempt")
	assert.Equal(t, 0, e.countEvents(ra, driver.EventStepItemCompleted, 0), "no item event for the failed attempt")
	assert.Len(t, e.Claim(10, "after"), 1, "only the quorum's next step")
}

func testStepsBatchedWithFailure(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "batched_steps", Steps: steps("s1", "s2")}
	w1 := e.Start(def, queuety.State{"w": 1})
	w2 := e.Start(def, queuety.State{"w": 2})
	w3 := e.Start(def, queuety.State{"w": 3})
	first := e.Claim(3, "s1")
	require.Len(t, first, 3, "first steps")
	by := map[int64]*engine.Claimed{}
	for _, cj := range first {
		by[cj.Job.WorkflowID] = cj
	}
	// w2's result is recorded alone first; in the batch the same attempt
	// is stale, w3's attempt fails, and w1's succeeds.
	require.NoError(t, e.completeSteps(e.success(by[w2], queuety.State{"from": "alone"}))[0], "w2 alone")
	failed := &engine.Result{Claimed: by[w3], Err: errors.New("s1 broke"), StartedAt: e.Clock.Now()}
	errs := e.completeSteps(
		e.success(by[w2], queuety.State{"from": "again"}),
		failed,
		e.success(by[w1], queuety.State{"from": "batch"}),
	)
	assert.ErrorIs(t, errs[0], queuetytype.ErrStaleAttempt, "the repeated result of w2")
	assert.NoError(t, errs[1], "the failure is recorded")
	assert.NoError(t, errs[2], "w1's success")
	assert.Equal(t, "alone", e.State(w2).String("from"), "w2 keeps its first result")
	assert.Equal(t, "batch", e.State(w1).String("from"), "w1's result")
	for _, id := range []int64{w1, w2} {
		assert.Equalf(t, 1, e.Workflow(id).CurrentStep, "workflow %d advanced once", id)
		assert.Equalf(t, 1, e.countEvents(id, driver.EventStepCompleted, 0), "step_completed events of workflow %d", id)
	}
	wf3 := e.Workflow(w3)
	assert.Equal(t, 0, wf3.CurrentStep, "the failed step did not advance")
	assert.Equal(t, 1, e.countEvents(w3, driver.EventStepFailed, 0), "step_failed events of the failed step")
	assert.Equal(t, 0, e.countEvents(w3, driver.EventStepCompleted, 0), "no step_completed for the failure")
	assert.NotEqual(t, queuetytype.JobCompleted, e.Job(by[w3].Job.ID).Status, "the failed attempt's job")
	next := e.Claim(10, "s2")
	assert.Len(t, next, 2, "one next step each for the two that advanced")
}

func testForEachLargeStateTwoProcesses(t *testing.T, e *Env) {
	// A state large enough for the engines to keep it decoded between
	// transactions; two engines (two processes) take turns recording its
	// branches, so each reads back states the other wrote.
	const n = 600
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%04d-%s", i, strings.Repeat("x", 90))
	}
	b := builder.Workflow("large_fan").ForEach("items", "big", builder.ResultKey("out")).Then("after")
	id := e.startB(b, queuety.State{"items": items})
	e.expandForEach()
	other := e.Clients(1)[0]
	engines := []*engine.Engine{e.eng, clientseam.Engine(other)}
	clients := []*queuety.Client{e.C, other}
	for turn := 0; ; turn++ {
		k := turn % 2
		jobs := e.ClaimFrom(clients[k], []string{queuetytype.DefaultQueue}, 70, "big")
		if len(jobs) == 0 {
			break
		}
		rs := make([]*engine.Result, len(jobs))
		for i, cj := range jobs {
			_, idx, ok := cj.ForEachItem()
			require.True(t, ok, "branch payload")
			rs[i] = e.success(cj, queuety.State{"i": idx, "by": k})
		}
		errs, err := engines[k].CompleteSteps(e.Ctx, rs)
		require.NoError(t, err, "complete steps")
		for i, err := range errs {
			require.NoErrorf(t, err, "result %d of turn %d", i, turn)
		}
	}
	wf := e.Workflow(id)
	require.Equal(t, 1, wf.CurrentStep, "the step settled (status %s, error %q)", wf.Status, wf.ErrorMessage)
	got := resultsByIndex(t, asMap(t, e.State(id)["out"], "aggregate"))
	require.Len(t, got, n, "results")
	for i := range n {
		assert.Equalf(t, int64(i), got[int64(i)]["i"], "result %d", i)
	}
	assert.Equal(t, n, e.countEvents(id, driver.EventStepItemCompleted, 0), "item events")
}
