package storetest

// The fan-out scenarios: for_each steps in each mode, with retried
// branches and the item budget, as Queuety 0.22 runs them, and the helpers
// the workflow scenarios share. The reducers are in accept_reducers.go,
// the repeat steps in accept_repeat.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/queuetytype"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("ForEach/AllConcurrentWorkers", testForEachAllConcurrent)
	register("ForEach/QuorumSettlesOnce", testForEachQuorum)
	register("ForEach/FirstSuccessWinner", testForEachFirstSuccess)
	register("ForEach/QuorumImpossibleThenRetryRerunsFailedBranch", testForEachImpossibleRetry)
	register("ForEach/BranchRetriedCountsOnce", testForEachBranchRetry)
	register("ForEach/MaxForEachItemsBudget", testForEachBudget)
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
	return e.eng.Finish(e.Ctx, &engine.Result{Claimed: cj, Output: out, Err: cause,
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
