package storetest

// The fan-out scenarios: for_each (modes, retries, reducers, budgets) and
// repeat steps, as Queuety 0.22 runs them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("ForEach/AllConcurrentWorkers", testForEachAllConcurrent)
	register("ForEach/QuorumSettlesOnce", testForEachQuorum)
	register("ForEach/FirstSuccessWinner", testForEachFirstSuccess)
	register("ForEach/QuorumImpossibleThenRetryRerunsFailedBranch", testForEachImpossibleRetry)
	register("ForEach/BranchRetriedCountsOnce", testForEachBranchRetry)
	register("ForEach/Reducer", testForEachReducer)
	register("ForEach/ReducerErrorFailsWorkflow", testForEachReducerError)
	register("ForEach/ReducerPanicFailsWorkflow", testForEachReducerPanic)
	register("ForEach/ReducerNotRegistered", testForEachReducerMissing)
	register("ForEach/MaxForEachItemsBudget", testForEachBudget)
	register("Repeat/UntilStateKey", testRepeatUntil)
	register("Repeat/WhileCondition", testRepeatWhileCondition)
	register("Repeat/MaxIterationsFailsWorkflow", testRepeatMaxIterations)
}

// startB dispatches a builder workflow.
func (e *Env) startB(b *builder.Builder, state any) int64 {
	e.T.Helper()
	id, err := b.Dispatch(e.Ctx, e.C, state)
	require.NoError(e.T, err, "dispatch workflow")
	return id
}

// finish records one attempt's outcome, with funcs for reducers and
// repeat conditions (nil for none).
func (e *Env) finish(cj *engine.Claimed, out queuety.State, cause error, funcs engine.Functions) error {
	return engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: cj, Output: out, Err: cause,
		StartedAt: e.Clock.Now(), Funcs: funcs})
}

// describe describes a workflow.
func (e *Env) describe(id int64) *queuetytype.WorkflowDescription {
	e.T.Helper()
	d, err := e.C.DescribeWorkflow(e.Ctx, id)
	require.NoErrorf(e.T, err, "describe workflow %d", id)
	return d
}

// countEvents counts a workflow's events of one type at one step (any step
// when step < 0).
func (e *Env) countEvents(id int64, ev driver.EventType, step int) int {
	n := 0
	for _, x := range e.events(id) {
		if x.Event == ev && (step < 0 || x.StepIndex == step) {
			n++
		}
	}
	return n
}

// expandForEach runs a for_each placeholder by hand, so that the test
// claims the branch jobs itself.
func (e *Env) expandForEach() {
	e.T.Helper()
	ph := e.ClaimOne(engine.HandlerForEach)
	require.NoError(e.T, e.finish(ph[0], nil, nil, nil), "expand the for-each placeholder")
}

// branchesByIndex claims n branch jobs of handler and keys them by item
// index.
func (e *Env) branchesByIndex(handler string, n int) map[int]*engine.Claimed {
	e.T.Helper()
	jobs := e.Claim(n, handler)
	require.Lenf(e.T, jobs, n, "claimed branch jobs of %s", handler)
	out := map[int]*engine.Claimed{}
	for _, cj := range jobs {
		_, idx, ok := cj.ForEachItem()
		require.Truef(e.T, ok, "job %d is not a for-each branch", cj.Job.ID)
		out[idx] = cj
	}
	require.Len(e.T, out, n, "distinct item indexes")
	return out
}

// handlerCounts counts jobs by handler.
func handlerCounts(jobs []*driver.Job) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		out[j.Handler]++
	}
	return out
}

func asMap(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.Truef(t, ok, "%s: want an object, got %T %v", what, v, v)
	return m
}

func asList(t *testing.T, v any, what string) []any {
	t.Helper()
	l, ok := v.([]any)
	require.Truef(t, ok, "%s: want a list, got %T %v", what, v, v)
	return l
}

// indexes returns the "index" of each aggregate entry.
func indexes(t *testing.T, entries []any) []int64 {
	t.Helper()
	out := make([]int64, len(entries))
	for i, x := range entries {
		out[i], _ = asMap(t, x, "entry")["index"].(int64)
	}
	return out
}

func terminal(s queuetytype.WorkflowStatus) bool {
	return s == queuetytype.WorkflowCompleted || s == queuetytype.WorkflowFailed || s == queuetytype.WorkflowCancelled
}

// drainUntil runs one worker per client concurrently, each calling RunOnce
// again and again until done reports true (checked on each client) or
// three minutes of real time have passed, so that no worker leaves early
// while another is still enqueueing work and the case can never hang. A
// worker whose RunOnce found nothing polls again after a few milliseconds.
func (e *Env) drainUntil(workers []*worker.Worker, clients []*queuety.Client, done func(c *queuety.Client) bool) {
	e.T.Helper()
	var finished atomic.Bool
	limit := time.Now().Add(3 * time.Minute)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range workers {
		c := clients[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for !finished.Load() && time.Now().Before(limit) {
				st, err := w.RunOnce(context.Background(), 20*time.Second)
				if err != nil {
					assert.NoError(e.T, err, "RunOnce")
					return
				}
				if done(c) {
					finished.Store(true)
				} else if st.Claimed == 0 {
					<-time.After(5 * time.Millisecond) // poll interval
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	require.True(e.T, finished.Load(), "workers drained for three minutes without finishing")
}

func testForEachAllConcurrent(t *testing.T, e *Env) {
	const n = 40
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprintf("sku-%02d", i)
	}
	b := builder.Workflow("price_catalog").ForEach("skus", "price_sku", builder.ResultKey("prices")).Then("publish")
	id := e.startB(b, queuety.State{"skus": items})
	placeholder := e.OneJob(driver.JobFilter{WorkflowID: id})
	assert.Equal(t, engine.HandlerForEach, placeholder.Handler, "job at dispatch")

	var calls [n]atomic.Int64
	var ranOn [8]atomic.Int64 // branches per worker
	var published atomic.Int64
	var bad atomic.Value
	clients := e.Clients(8)
	workers := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		w := e.Worker(c, worker.Concurrency(4))
		w.HandleForEach("price_sku", func(_ context.Context, s queuety.State, item any, index int) (queuety.State, error) {
			ranOn[i].Add(1)
			if index < 0 || index >= n || item != fmt.Sprintf("sku-%02d", index) {
				bad.Store(fmt.Sprintf("branch got item %v at index %d", item, index))
				return nil, queuety.NonRetryable(errors.New("wrong item"))
			}
			calls[index].Add(1)
			return queuety.State{"sku": item, "price": int64(index * 10)}, nil
		})
		w.HandleStep("publish", func(_ context.Context, s queuety.State) (queuety.State, error) {
			published.Add(1)
			return queuety.State{"published": true}, nil
		})
		workers[i] = w
	}
	e.drainUntil(workers, clients, func(c *queuety.Client) bool {
		wf, err := c.Workflow(context.Background(), id)
		return err == nil && terminal(wf.Status)
	})
	require.Nil(t, bad.Load(), "branch handler saw a wrong item")

	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, 1, e.countEvents(id, driver.EventStepCompleted, 0), "step_completed events of the for_each step")
	assert.Equal(t, n, e.countEvents(id, driver.EventStepItemCompleted, 0), "step_item_completed events")
	assert.Equal(t, int64(1), published.Load(), "the following step ran")
	for i := range calls {
		assert.Equalf(t, int64(1), calls[i].Load(), "calls of branch %d", i)
	}
	busy := 0
	for i := range ranOn {
		if ranOn[i].Load() > 0 {
			busy++
		}
	}
	// Which workers win the claims is up to the scheduler (on a loaded
	// machine one may take them all); the properties above hold either way.
	t.Logf("%d of %d workers ran branches", busy, len(ranOn))

	st := e.State(id)
	assert.Equal(t, true, st["published"], "publish output merged")
	agg := asMap(t, st["prices"], "aggregate")
	assert.Equal(t, "all", agg["mode"], "mode")
	assert.Equal(t, int64(n), agg["total"], "total")
	assert.Equal(t, int64(n), agg["succeeded"], "succeeded")
	assert.Equal(t, int64(0), agg["failed"], "failed")
	assert.Equal(t, true, agg["settled"], "settled")
	results := asList(t, agg["results"], "results")
	require.Len(t, results, n, "results")
	for i, r := range results {
		m := asMap(t, r, "result")
		assert.Equalf(t, int64(i), m["index"], "results[%d].index (index order)", i)
		assert.Equalf(t, items[i], m["item"], "results[%d].item", i)
		out := asMap(t, m["output"], "output")
		assert.Equalf(t, int64(i*10), out["price"], "results[%d].output.price", i)
		assert.Equalf(t, items[i], out["sku"], "results[%d].output.sku", i)
	}
	assert.Empty(t, asList(t, agg["failures"], "failures"), "failures")

	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	assert.Len(t, jobs, 1+n+1, "jobs: placeholder + branches + publish")
	assert.Equal(t, map[string]int{engine.HandlerForEach: 1, "price_sku": n, "publish": 1}, handlerCounts(jobs), "jobs by handler")
	seen := map[int]bool{}
	for _, j := range jobs {
		assert.Equalf(t, queuetytype.JobCompleted, j.Status, "job %d (%s)", j.ID, j.Handler)
		if j.Handler != "price_sku" {
			continue
		}
		var p map[string]any
		require.NoError(t, json.Unmarshal(j.Payload, &p), "branch payload")
		meta := asMap(t, p["__for_each"], "__for_each")
		idx := int(meta["item_index"].(float64))
		assert.Equalf(t, items[idx], meta["item"], "job %d __for_each.item", j.ID)
		assert.Falsef(t, seen[idx], "two branch jobs for item %d", idx)
		seen[idx] = true
		if assert.NotNil(t, j.StepIndex) {
			assert.Equal(t, 0, *j.StepIndex, "branch step_index")
		}
	}
	assert.Len(t, seen, n, "branch jobs per item")
}

func testForEachQuorum(t *testing.T, e *Env) {
	items := []any{"a", "b", "c", "d", "e"}
	b := builder.Workflow("quorum_checks").
		ForEach("items", "check", builder.Quorum(2), builder.Retry(1), builder.ResultKey("checks"), builder.Name("checks")).
		Then("after")
	id := e.startB(b, queuety.State{"items": items})
	e.expandForEach()
	br := e.branchesByIndex("check", 5)

	// A permanent failure does not settle a quorum of 2 out of 5.
	require.NoError(t, e.finish(br[0], nil, errors.New("a is broken"), nil))
	assert.Equal(t, queuetytype.JobBuried, e.Job(br[0].Job.ID).Status, "failed branch (one attempt)")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status after one failure (error %q)", wf.ErrorMessage)
	d := e.describe(id)
	require.NotNil(t, d.Steps[0].ForEach, "describe: for-each progress")
	assert.Equal(t, engine.ForEachInfo{Mode: "quorum", Quorum: 2, Items: 5, Succeeded: 0, Failed: 1, Open: 4, Settled: false},
		*d.Steps[0].ForEach, "describe: for-each progress")

	require.NoError(t, e.finish(br[1], queuety.State{"ok": "b"}, nil, nil))
	assert.Equal(t, 0, e.Workflow(id).CurrentStep, "one success does not settle")
	require.NoError(t, e.finish(br[3], queuety.State{"ok": "d"}, nil, nil))
	wf = e.Workflow(id)
	assert.Equal(t, 1, wf.CurrentStep, "second success settles the quorum")
	for _, i := range []int{2, 4} {
		j := e.Job(br[i].Job.ID)
		assert.Equalf(t, queuetytype.JobBuried, j.Status, "open branch %d after settling", i)
		assert.Equalf(t, "For-each completion settled early.", j.ErrorMessage, "open branch %d error", i)
	}
	// A late result of a branch buried by the settling is rejected and
	// changes nothing.
	err := e.finish(br[2], queuety.State{"ok": "c"}, nil, nil)
	assert.ErrorIs(t, err, queuetytype.ErrStaleAttempt, "late branch result")
	late := e.Job(br[2].Job.ID)
	assert.Equal(t, queuetytype.JobBuried, late.Status, "late branch")
	assert.Contains(t, []string{"For-each completion settled early.", "For-each step already settled."}, late.ErrorMessage, "late branch error")

	var after atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("after", counter(&after, nil))
	e.Drain(w)
	wf = e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(1), after.Load(), "after ran")
	assert.Equal(t, 1, e.countEvents(id, driver.EventStepCompleted, 0), "step_completed events of the for_each step")
	assert.Equal(t, 2, e.countEvents(id, driver.EventStepItemCompleted, 0), "step_item_completed events")

	agg := asMap(t, e.State(id)["checks"], "aggregate")
	assert.Equal(t, "quorum", agg["mode"], "mode")
	assert.Equal(t, int64(2), agg["quorum"], "quorum")
	assert.Equal(t, int64(5), agg["total"], "total")
	assert.Equal(t, int64(2), agg["succeeded"], "succeeded")
	assert.Equal(t, int64(1), agg["failed"], "failed")
	assert.Equal(t, []int64{1, 3}, indexes(t, asList(t, agg["results"], "results")), "result indexes")
	winner := asMap(t, agg["winner"], "winner")
	assert.Equal(t, int64(1), winner["index"], "winner")
	fails := asList(t, agg["failures"], "failures")
	require.Len(t, fails, 1, "failures")
	f := asMap(t, fails[0], "failure")
	assert.Equal(t, int64(0), f["index"], "failure index")
	assert.Equal(t, "a is broken", f["error_message"], "failure error")
	assert.Equal(t, int64(br[0].Job.ID), f["job_id"], "failure job id")
	d = e.describe(id)
	assert.Equal(t, engine.ForEachInfo{Mode: "quorum", Quorum: 2, Items: 5, Succeeded: 2, Failed: 1, Open: 2, Settled: true},
		*d.Steps[0].ForEach, "describe after settling")
}

func testForEachFirstSuccess(t *testing.T, e *Env) {
	b := builder.Workflow("mirror_race").
		ForEach("mirrors", "download", builder.FirstSuccess(), builder.Retry(1), builder.ResultKey("download")).
		Then("after")
	id := e.startB(b, queuety.State{"mirrors": []any{"eu", "us", "ap"}})
	e.expandForEach()
	br := e.branchesByIndex("download", 3)
	require.NoError(t, e.finish(br[2], nil, errors.New("ap unreachable"), nil))
	assert.Equal(t, 0, e.Workflow(id).CurrentStep, "a failure does not settle first_success")
	require.NoError(t, e.finish(br[1], queuety.State{"bytes": 1024}, nil, nil))
	wf := e.Workflow(id)
	assert.Equal(t, 1, wf.CurrentStep, "the first success settles")
	j := e.Job(br[0].Job.ID)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "open branch")
	assert.Equal(t, "For-each completion settled early.", j.ErrorMessage, "open branch error")
	assert.ErrorIs(t, e.finish(br[0], queuety.State{"bytes": 1}, nil, nil), queuetytype.ErrStaleAttempt, "late winner")

	w := e.Worker(nil)
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	agg := asMap(t, e.State(id)["download"], "aggregate")
	assert.Equal(t, "first_success", agg["mode"], "mode")
	assert.Equal(t, int64(1), agg["succeeded"], "succeeded")
	assert.Equal(t, int64(1), agg["failed"], "failed")
	winner := asMap(t, agg["winner"], "winner")
	assert.Equal(t, int64(1), winner["index"], "winner index")
	assert.Equal(t, "us", winner["item"], "winner item")
	assert.Equal(t, int64(br[1].Job.ID), winner["job_id"], "winner job")
	assert.Equal(t, int64(1024), asMap(t, winner["output"], "winner output")["bytes"], "winner output")
	assert.Equal(t, 1, e.countEvents(id, driver.EventStepCompleted, 0), "step_completed events")
}

func testForEachImpossibleRetry(t *testing.T, e *Env) {
	items := []any{"p", "q", "r"}
	b := builder.Workflow("all_three").
		ForEach("items", "verify", builder.Quorum(3), builder.Retry(1), builder.ResultKey("verified")).
		Then("after")
	id := e.startB(b, queuety.State{"items": items})
	var calls [3]atomic.Int64
	var broken atomic.Bool
	broken.Store(true)
	verify := func(_ context.Context, _ queuety.State, item any, index int) (queuety.State, error) {
		calls[index].Add(1)
		if index == 2 && broken.Load() {
			return nil, errors.New("r is broken")
		}
		return queuety.State{"verified": item}, nil
	}
	e.expandForEach()
	br := e.branchesByIndex("verify", 3)
	first := map[int]int64{}
	for _, i := range []int{0, 1, 2} {
		item, _, _ := br[i].ForEachItem()
		out, err := verify(e.Ctx, nil, item, i)
		require.NoError(t, e.finish(br[i], out, err, nil), "finish branch %d", i)
		first[i] = br[i].Job.ID
	}
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status once the quorum is impossible")
	assert.Equal(t, "r is broken", wf.ErrorMessage, "workflow error is the branch's")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(first[0]).Status, "branch 0")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(first[1]).Status, "branch 1")
	assert.Equal(t, queuetytype.JobBuried, e.Job(first[2]).Status, "branch 2")

	broken.Store(false)
	require.NoError(t, e.C.RetryWorkflow(e.Ctx, id))
	w := e.Worker(nil)
	w.HandleForEach("verify", verify)
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	wf = e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status after retry (error %q)", wf.ErrorMessage)
	assert.Equal(t, []int64{1, 1, 2}, []int64{calls[0].Load(), calls[1].Load(), calls[2].Load()}, "handler calls per item")
	agg := asMap(t, e.State(id)["verified"], "aggregate")
	assert.Equal(t, int64(3), agg["succeeded"], "succeeded")
	assert.Equal(t, int64(0), agg["failed"], "failed")
	results := asList(t, agg["results"], "results")
	require.Len(t, results, 3, "results")
	assert.Equal(t, int64(first[0]), asMap(t, results[0], "r0")["job_id"], "branch 0 result kept from the first run")
	assert.Equal(t, int64(first[1]), asMap(t, results[1], "r1")["job_id"], "branch 1 result kept from the first run")
	assert.NotEqual(t, int64(first[2]), asMap(t, results[2], "r2")["job_id"], "branch 2 re-ran in a new job")
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	assert.Equal(t, map[string]int{engine.HandlerForEach: 2, "verify": 4, "after": 1}, handlerCounts(jobs), "jobs by handler")
}

func testForEachBranchRetry(t *testing.T, e *Env) {
	b := builder.Workflow("flaky_fanout").ForEach("items", "flaky", builder.Retry(2), builder.ResultKey("out")).Then("after")
	id := e.startB(b, queuety.State{"items": []any{"m", "n"}})
	var calls [2]atomic.Int64
	w := e.Worker(nil)
	w.HandleForEach("flaky", func(_ context.Context, _ queuety.State, item any, index int) (queuety.State, error) {
		if calls[index].Add(1) == 1 && index == 1 {
			return nil, errors.New("n flaked")
		}
		return queuety.State{"got": item}, nil
	})
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(id).Status, "status while the branch backs off")
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	agg := asMap(t, e.State(id)["out"], "aggregate")
	assert.Equal(t, int64(2), agg["succeeded"], "succeeded")
	assert.Equal(t, int64(0), agg["failed"], "failed")
	assert.Equal(t, []int64{0, 1}, indexes(t, asList(t, agg["results"], "results")), "results")
	assert.Equal(t, int64(2), calls[1].Load(), "calls of the flaky branch")
	var flaky []*driver.Job
	for _, j := range e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "flaky"}) {
		var p map[string]any
		require.NoError(t, json.Unmarshal(j.Payload, &p))
		if asMap(t, p["__for_each"], "__for_each")["item_index"] == float64(1) {
			flaky = append(flaky, j)
		}
	}
	require.Len(t, flaky, 1, "jobs of the flaky branch")
	assert.Equal(t, 2, flaky[0].Attempts, "attempts of the flaky branch")
	assert.Equal(t, queuetytype.JobCompleted, flaky[0].Status, "flaky branch")
	assert.Equal(t, 2, e.countEvents(id, driver.EventStepItemCompleted, 0), "step_item_completed events")
	assert.Equal(t, 1, e.countEvents(id, driver.EventStepFailed, 0), "step_failed events")
}

func testForEachReducer(t *testing.T, e *Env) {
	b := builder.Workflow("squares").
		ForEach("nums", "square", builder.Reducer("sum_squares"), builder.ResultKey("sq")).
		Then("after")
	id := e.startB(b, queuety.State{"nums": []any{1, 2, 3}})
	var got []queuetytype.ForEachResult
	var sawAgg atomic.Bool
	w := e.Worker(nil)
	w.HandleForEach("square", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		n, _ := item.(int64)
		return queuety.State{"sq": n * n}, nil
	})
	w.HandleReducer("sum_squares", func(_ context.Context, s queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		got = append(got, r)
		_, ok := s["sq"].(map[string]any)
		sawAgg.Store(ok)
		var sum int64
		for _, b := range r.Results {
			v, _ := b.Output["sq"].(int64)
			sum += v
		}
		return queuety.State{"sum_of_squares": sum}, nil
	})
	var saw atomic.Value
	w.HandleStep("after", func(_ context.Context, s queuety.State) (queuety.State, error) {
		saw.Store(s["sum_of_squares"])
		return nil, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	require.Len(t, got, 1, "reducer calls")
	r := got[0]
	assert.Equal(t, "all", r.Mode, "mode")
	assert.Equal(t, 3, r.Total, "total")
	assert.Equal(t, 3, r.Succeeded, "succeeded")
	require.Len(t, r.Results, 3, "results")
	for i, b := range r.Results {
		assert.Equalf(t, i, b.Index, "results[%d] index order", i)
		assert.Equalf(t, int64(i+1), b.Item, "results[%d] item", i)
		assert.NotZerof(t, b.JobID, "results[%d] job id", i)
	}
	require.NotNil(t, r.Winner, "winner")
	assert.True(t, sawAgg.Load(), "the reducer's state holds the aggregate under the result key")
	st := e.State(id)
	assert.Equal(t, int64(14), st["sum_of_squares"], "reducer output merged")
	assert.Equal(t, int64(14), saw.Load(), "next step saw the reducer output")
	assert.Equal(t, int64(3), asMap(t, st["sq"], "aggregate")["succeeded"], "aggregate kept")
}

// reducerFailure runs a two-item for_each whose reducer is reg's
// "reduce" (or missing), recording the last branch by hand, and returns
// the workflow and the error Finish returned.
func (e *Env) reducerFailure(reg *queuety.Registry) (int64, *engine.Claimed, error) {
	e.T.Helper()
	b := builder.Workflow("reduced").ForEach("items", "branch", builder.Reducer("reduce"), builder.Retry(1)).Then("after")
	id := e.startB(b, queuety.State{"items": []any{"x", "y"}})
	e.expandForEach()
	br := e.branchesByIndex("branch", 2)
	require.NoError(e.T, e.finish(br[0], queuety.State{"v": 1}, nil, clientseam.Functions(reg)))
	done := make(chan error, 1)
	go func() { done <- e.finish(br[1], queuety.State{"v": 2}, nil, clientseam.Functions(reg)) }()
	select {
	case err := <-done:
		return id, br[1], err
	case <-time.After(30 * time.Second):
		require.FailNow(e.T, "recording the settling branch did not return")
	}
	return id, br[1], nil
}

// checkReducerFailed checks that a failing reducer failed the workflow
// with a message containing want, and that no later step ran.
func (e *Env) checkReducerFailed(id int64, last *engine.Claimed, finishErr error, want string) {
	t := e.T
	t.Helper()
	assert.NoError(t, finishErr, "recording a result whose reducer fails must not be a database error")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, want, "workflow error")
	assert.Equal(t, 0, wf.CurrentStep, "current step")
	j := e.Job(last.Job.ID)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "settling branch job")
	assert.Contains(t, j.ErrorMessage, want, "settling branch job error")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "after"}), "next step enqueued")
	_, has := e.State(id)["items_results"]
	assert.False(t, has, "aggregate merged although the reducer failed")
}

func testForEachReducerError(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleReducer("reduce", func(context.Context, queuety.State, queuetytype.ForEachResult) (queuety.State, error) {
		return nil, errors.New("ledger closed")
	})
	id, last, err := e.reducerFailure(reg)
	e.checkReducerFailed(id, last, err, "ledger closed")
}

func testForEachReducerPanic(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleReducer("reduce", func(context.Context, queuety.State, queuetytype.ForEachResult) (queuety.State, error) {
		panic("reducer exploded")
	})
	id, last, err := e.reducerFailure(reg)
	e.checkReducerFailed(id, last, err, "reducer exploded")
}

func testForEachReducerMissing(t *testing.T, e *Env) {
	id, last, err := e.reducerFailure(queuety.NewRegistry())
	e.checkReducerFailed(id, last, err, "reduce")
	assert.Contains(t, e.Workflow(id).ErrorMessage, "not found", "workflow error names the missing reducer")
}

func testForEachBudget(t *testing.T, e *Env) {
	b := builder.Workflow("capped").MaxForEachItems(2).ForEach("items", "branch", builder.Name("each")).Then("after")
	id := e.startB(b, queuety.State{"items": []any{1, 2, 3}})
	var calls atomic.Int64
	w := e.Worker(nil)
	w.HandleForEach("branch", func(context.Context, queuety.State, any, int) (queuety.State, error) {
		calls.Add(1)
		return nil, nil
	})
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, "planned 3 items, exceeding max_for_each_items budget of 2", "error")
	assert.Equal(t, int64(0), calls.Load(), "branch calls")
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	require.Len(t, jobs, 1, "jobs (the placeholder only)")
	assert.Equal(t, queuetytype.JobBuried, jobs[0].Status, "placeholder")
	assert.Equal(t, 1, jobs[0].Attempts, "placeholder attempts (a budget breach is final)")
}

// repeatWorker runs inc -> repeat -> done, with inc adding 1 to "counter".
func (e *Env) repeatWorker(incs *atomic.Int64, dones *atomic.Int64) *worker.Worker {
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleStep("increment", func(_ context.Context, s queuety.State) (queuety.State, error) {
		incs.Add(1)
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	})
	w.HandleStep("done", func(_ context.Context, s queuety.State) (queuety.State, error) {
		dones.Add(1)
		return queuety.State{"done": true}, nil
	})
	return w
}

// repeatStepsJSON returns the stored _repeat_steps as JSON.
func (e *Env) repeatStepsJSON(id int64) string {
	e.T.Helper()
	v, ok := e.rawState(id).Get("_repeat_steps")
	require.True(e.T, ok, "_repeat_steps in the state")
	return string(engine.EncodeJSON(v))
}

func testRepeatUntil(t *testing.T, e *Env) {
	b := builder.Workflow("count_to_three").
		Then("increment", builder.Name("inc")).
		RepeatUntil("inc", builder.StateIs("counter", 3)).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	var incs, dones atomic.Int64
	e.Drain(e.repeatWorker(&incs, &dones))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(3), e.State(id)["counter"], "counter")
	assert.Equal(t, int64(3), incs.Load(), "increment calls")
	assert.Equal(t, int64(1), dones.Load(), "done calls")
	assert.Equal(t, `{"1":{"iterations":2}}`, e.repeatStepsJSON(id), "_repeat_steps")
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerRepeat}), 3, "repeat placeholder jobs")
	d := e.describe(id)
	require.NotNil(t, d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, int64(2), *d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, "repeat", d.Steps[1].Type, "describe: step type")
}

func testRepeatWhileCondition(t *testing.T, e *Env) {
	b := builder.Workflow("paginate").
		Then("increment", builder.Name("fetch")).
		RepeatWhile("fetch", builder.ConditionNamed("more_pages")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0, "pages": 4})
	var incs, dones, checks atomic.Int64
	w := e.repeatWorker(&incs, &dones)
	w.HandleRepeatCondition("more_pages", func(_ context.Context, s queuety.State) (bool, error) {
		checks.Add(1)
		n, _ := s.Int("counter")
		pages, _ := s.Int("pages")
		return n < pages, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(4), e.State(id)["counter"], "counter")
	assert.Equal(t, int64(4), checks.Load(), "condition calls")
	assert.Equal(t, int64(1), dones.Load(), "done calls")
	assert.Equal(t, `{"1":{"iterations":3}}`, e.repeatStepsJSON(id), "_repeat_steps")
	d := e.describe(id)
	require.NotNil(t, d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, int64(3), *d.Steps[1].Iterations, "describe: iterations")
}

func testRepeatMaxIterations(t *testing.T, e *Env) {
	b := builder.Workflow("runaway").
		Then("increment", builder.Name("inc")).
		RepeatUntil("inc", builder.StateIs("counter", 100), builder.MaxIterations(2), builder.Name("loop")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	var incs, dones atomic.Int64
	e.Drain(e.repeatWorker(&incs, &dones))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, "exceeded max_iterations of 2", "error")
	assert.Contains(t, wf.ErrorMessage, "'loop'", "error names the step")
	assert.Equal(t, int64(3), incs.Load(), "increment calls (the first run and two iterations)")
	assert.Equal(t, int64(0), dones.Load(), "done calls")
	assert.Equal(t, 1, wf.CurrentStep, "failed on the repeat step")
	last := e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerRepeat})
	require.Len(t, last, 3, "repeat jobs")
	buried := 0
	for _, j := range last {
		if j.Status == queuetytype.JobBuried {
			buried++
			assert.Equal(t, 1, j.Attempts, "the breach is final")
			assert.True(t, strings.Contains(j.ErrorMessage, "max_iterations"), "buried repeat job error %q", j.ErrorMessage)
		}
	}
	assert.Equal(t, 1, buried, "buried repeat jobs")
}

func init() {
	register("Repeat/ConditionErrorFailsWorkflow", testRepeatConditionError)
	register("Repeat/ConditionNotRegistered", testRepeatConditionMissing)
}

// repeatConditionFailure runs inc -> repeat_while(cond) with the repeat
// step recorded by hand with reg, and checks that the workflow failed with
// an error containing want.
func (e *Env) repeatConditionFailure(reg *queuety.Registry, want string) {
	t := e.T
	t.Helper()
	b := builder.Workflow("conditional").MaxAttempts(1).
		Then("increment", builder.Name("inc")).
		RepeatWhile("inc", builder.ConditionNamed("cond"), builder.Name("again")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	inc := e.ClaimOne("increment")
	require.NoError(t, e.finish(inc[0], queuety.State{"counter": 1}, nil, nil))
	rep := e.ClaimOne(engine.HandlerRepeat)
	done := make(chan error, 1)
	go func() { done <- e.finish(rep[0], nil, nil, clientseam.Functions(reg)) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "recording the repeat step did not return")
	}
	assert.NoError(t, err, "recording a repeat whose condition fails must not be a database error")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, want, "workflow error")
	j := e.Job(rep[0].Job.ID)
	assert.NotEqual(t, queuetytype.JobProcessing, j.Status, "repeat job left processing")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "done"}), "next step enqueued")
}

func testRepeatConditionError(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleRepeatCondition("cond", func(context.Context, queuety.State) (bool, error) {
		return false, errors.New("condition backend down")
	})
	e.repeatConditionFailure(reg, "condition backend down")
}

func testRepeatConditionMissing(t *testing.T, e *Env) {
	e.repeatConditionFailure(queuety.NewRegistry(), "Repeat condition class 'cond' not found")
}

func init() {
	register("ForEach/WorkerWithoutReducerDefers", testForEachReducerDefer)
	register("Repeat/WorkerWithoutConditionDefers", testRepeatConditionDefer)
}

// testForEachReducerDefer: a worker that has a for-each branch handler but
// not the step's reducer hands the branches back, due after
// worker.DeferDelay and without using an attempt, instead of failing them;
// a worker that has both runs them and the step settles.
func testForEachReducerDefer(t *testing.T, e *Env) {
	b := builder.Workflow("deferred").ForEach("items", "branch", builder.Reducer("sum"))
	id := e.startB(b, queuety.State{"items": []any{1, 2}})
	branch := func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		return queuety.State{"v": item}, nil
	}
	lacking := e.Worker(nil)
	var lackingCalls atomic.Int64
	lacking.HandleForEach("branch", func(ctx context.Context, s queuety.State, item any, i int) (queuety.State, error) {
		lackingCalls.Add(1)
		return branch(ctx, s, item, i)
	})
	e.Drain(lacking)
	assert.Zero(t, lackingCalls.Load(), "branches run by a worker without the reducer")
	for _, j := range e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "branch"}) {
		assert.Equal(t, queuetytype.JobPending, j.Status, "branch %d status", j.ID)
		assert.Zero(t, j.Attempts, "branch %d attempts (deferring uses none)", j.ID)
		assert.Equal(t, Epoch.Add(worker.DeferDelay), j.AvailableAt, "branch %d due after the defer delay", j.ID)
	}
	full := e.Worker(nil)
	full.HandleForEach("branch", branch)
	full.HandleReducer("sum", func(_ context.Context, _ queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		return queuety.State{"n": r.Succeeded}, nil
	})
	e.Clock.Advance(worker.DeferDelay)
	e.Drain(full)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, int64(2), e.State(id)["n"], "reducer output")
}

// testRepeatConditionDefer: a worker without a repeat step's condition
// defers the repeat placeholder; one that has it decides the repeat.
func testRepeatConditionDefer(t *testing.T, e *Env) {
	b := builder.Workflow("deferred_repeat").Then("inc", builder.Name("inc")).RepeatUntil("inc", builder.ConditionNamed("enough"))
	id := e.startB(b, nil)
	inc := func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	}
	lacking := e.Worker(nil)
	lacking.HandleStep("inc", inc)
	e.Drain(lacking)
	placeholder := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "__queuety_repeat"})
	assert.Equal(t, queuetytype.JobPending, placeholder.Status, "repeat placeholder status")
	assert.Zero(t, placeholder.Attempts, "repeat placeholder attempts")
	full := e.Worker(nil)
	full.HandleStep("inc", inc)
	full.HandleRepeatCondition("enough", func(_ context.Context, s queuety.State) (bool, error) {
		n, _ := s.Int("counter")
		return n >= 2, nil
	})
	e.Clock.Advance(worker.DeferDelay)
	e.Drain(full)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, int64(2), e.State(id)["counter"], "counter")
}
