package storetest

// The scenarios of steps that start or wait on other workflows:
// run_workflow, start_workflows and wait_for_workflows.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Children/RunWorkflowWaitsAndMerges", testRunWorkflow)
	register("Children/NestedRunWorkflowResumesUpward", testRunWorkflowNested)
	register("Children/ChildFailureFailsParent", testRunWorkflowChildFails)
	register("Children/ChildCancelFailsParent", testRunWorkflowChildCancelled)
	register("Children/ParentDeadlineLeavesChildRunning", testRunWorkflowParentDeadline)
	register("StartWorkflows/WaitForGroupAll", testStartWorkflowsGroup)
	register("StartWorkflows/PayloadRules", testStartWorkflowsPayload)
	register("StartWorkflows/MaxStartedWorkflowsBudget", testStartWorkflowsBudget)
	register("WaitWorkflows/Any", testWaitAny)
	register("WaitWorkflows/Quorum", testWaitQuorum)
	register("WaitWorkflows/AllWithFailureFails", testWaitAllFailure)
	register("WaitWorkflows/AlreadyCompletedContinuesAtOnce", testWaitAlreadyDone)
	register("WaitWorkflows/InStateKey", testWaitIn)
	register("WaitWorkflows/ConcurrentDependenciesSettleOnce", testWaitConcurrent)
}

// children returns the run_workflow children of a workflow.
func (e *Env) children(parent int64) []*driver.Workflow {
	e.T.Helper()
	return e.Workflows(driver.WorkflowFilter{Parent: parent})
}

// oneChild returns the only child of a workflow.
func (e *Env) oneChild(parent int64) *driver.Workflow {
	e.T.Helper()
	kids := e.children(parent)
	require.Lenf(e.T, kids, 1, "children of workflow %d", parent)
	return kids[0]
}

// step returns a step function that counts its calls and returns out.
func stepFn(n *atomic.Int64, out queuety.State) queuety.StepFunc { return counter(n, out) }

func testRunWorkflow(t *testing.T, e *Env) {
	child := builder.Workflow("charge_card").Then("charge")
	b := builder.Workflow("checkout").
		Then("prepare").
		RunWorkflow("charge_card", child, builder.Name("payment")).
		Then("ship")
	id := e.startB(b, queuety.State{"order_id": 9})
	var shipped atomic.Int64
	var shipSaw atomic.Value
	parentW := e.Worker(nil)
	parentW.HandleStep("prepare", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"amount": 120}, nil
	})
	parentW.HandleStep("ship", func(_ context.Context, s queuety.State) (queuety.State, error) {
		shipped.Add(1)
		shipSaw.Store(s.String("charge_id"))
		return queuety.State{"shipped": true}, nil
	})
	e.Drain(parentW) // the child's step has no handler here
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "parent status while the child runs")
	assert.Equal(t, 1, wf.CurrentStep, "parent step")
	kid := e.oneChild(id)
	assert.Equal(t, "charge_card", kid.Name, "child name")
	assert.Equal(t, queuetytype.WorkflowRunning, kid.Status, "child status")
	assert.Equal(t, id, kid.ParentWorkflowID, "child parent_workflow_id")
	if assert.NotNil(t, kid.ParentStepIndex, "child parent_step_index") {
		assert.Equal(t, 1, *kid.ParentStepIndex, "child parent_step_index")
	}
	assert.Equal(t, queuety.State{"order_id": int64(9), "amount": int64(120)}, e.State(kid.ID), "child initial state = parent public state")
	ph := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerRunWorkflow})
	assert.Equal(t, queuetytype.JobCompleted, ph.Status, "run_workflow placeholder")
	d := e.describe(id)
	assert.Equal(t, "waiting", d.Steps[1].Status, "describe: run_workflow step")
	require.Len(t, d.Steps[1].Children, 1, "describe: children")
	assert.Equal(t, engine.ChildInfo{ID: kid.ID, Name: "charge_card", Status: queuetytype.WorkflowRunning}, d.Steps[1].Children[0], "describe: child")
	assert.Equal(t, "not_started", d.Steps[2].Status, "describe: next step")
	kd := e.describe(kid.ID)
	assert.Equal(t, id, kd.ParentID, "describe child: parent")

	childW := e.Worker(nil)
	childW.HandleStep("charge", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("amount")
		return queuety.State{"charge_id": fmt.Sprintf("ch_%d", n), "_internal": "dropped"}, nil
	})
	e.Drain(childW)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(kid.ID).Status, "child status")
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "parent resumed")
	assert.Equal(t, 2, wf.CurrentStep, "parent moved past run_workflow")
	e.Drain(parentW)
	wf = e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(1), shipped.Load(), "ship ran")
	assert.Equal(t, "ch_120", shipSaw.Load(), "ship saw the child's output")
	st := e.State(id)
	assert.Equal(t, "ch_120", st["charge_id"], "child key merged")
	assert.Equal(t, true, st["shipped"], "ship output")
	_, leaked := e.rawState(id).Get("_internal")
	assert.False(t, leaked, "child private key merged into the parent")
	d = e.describe(id)
	require.Len(t, d.Steps[1].Children, 1, "describe: children")
	assert.Equal(t, queuetytype.WorkflowCompleted, d.Steps[1].Children[0].Status, "describe: child done")
	assert.Equal(t, "completed", d.Steps[1].Status, "describe: run_workflow step done")
}

func testRunWorkflowNested(t *testing.T, e *Env) {
	grand := builder.Workflow("grandchild").Then("g_step")
	child := builder.Workflow("child").RunWorkflow("grandchild", grand).Then("c_after")
	b := builder.Workflow("parent").RunWorkflow("child", child).Then("p_after")
	id := e.startB(b, queuety.State{"depth": 0})
	var g, c, p atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("g_step", stepFn(&g, queuety.State{"from_grandchild": true}))
	w.HandleStep("c_after", func(_ context.Context, s queuety.State) (queuety.State, error) {
		c.Add(1)
		if !s.Bool("from_grandchild") {
			return nil, queuety.NonRetryable(errors.New("grandchild output missing in the child"))
		}
		return queuety.State{"from_child": true}, nil
	})
	w.HandleStep("p_after", func(_ context.Context, s queuety.State) (queuety.State, error) {
		p.Add(1)
		if !s.Bool("from_child") || !s.Bool("from_grandchild") {
			return nil, queuety.NonRetryable(errors.New("child output missing in the parent"))
		}
		return queuety.State{"done": true}, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent status (error %q)", wf.ErrorMessage)
	assert.Equal(t, []int64{1, 1, 1}, []int64{g.Load(), c.Load(), p.Load()}, "step calls")
	kid := e.oneChild(id)
	assert.Equal(t, queuetytype.WorkflowCompleted, kid.Status, "child status")
	gk := e.oneChild(kid.ID)
	assert.Equal(t, queuetytype.WorkflowCompleted, gk.Status, "grandchild status")
	assert.Equal(t, kid.ID, gk.ParentWorkflowID, "grandchild's parent")
	assert.Empty(t, e.children(gk.ID), "grandchild children")
	st := e.State(id)
	assert.Equal(t, queuety.State{"depth": int64(0), "from_grandchild": true, "from_child": true, "done": true}, st, "parent state")
}

// childFailure is a parent whose run_workflow child is "fragile", with a
// step after it that must never run.
func (e *Env) childFailure(after *atomic.Int64) (int64, *worker.Worker) {
	child := builder.Workflow("fragile").MaxAttempts(1).Then("fragile_step")
	b := builder.Workflow("parent").RunWorkflow("fragile", child).Then("after")
	id := e.startB(b, nil)
	w := e.Worker(nil)
	w.HandleStep("after", counter(after, nil))
	e.Drain(w)
	return id, w
}

func testRunWorkflowChildFails(t *testing.T, e *Env) {
	var after atomic.Int64
	id, w := e.childFailure(&after)
	kid := e.oneChild(id)
	cw := e.Worker(nil)
	cw.HandleStep("fragile_step", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, errors.New("card declined")
	})
	e.Drain(cw)
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(kid.ID).Status, "child status")
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "parent status")
	assert.Equal(t, fmt.Sprintf("Child workflow %d failed: card declined", kid.ID), wf.ErrorMessage, "parent error")
	assert.Equal(t, 0, wf.CurrentStep, "parent step")
	e.Drain(w)
	assert.Equal(t, int64(0), after.Load(), "step after the child ran")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "after"}), "step after the child enqueued")
	failed := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowFailed})
	assert.Len(t, failed, 1, "parent workflow_failed logs")
}

func testRunWorkflowChildCancelled(t *testing.T, e *Env) {
	var after atomic.Int64
	id, w := e.childFailure(&after)
	kid := e.oneChild(id)
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, kid.ID))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "parent status")
	assert.Equal(t, fmt.Sprintf("Child workflow %d was cancelled.", kid.ID), wf.ErrorMessage, "parent error")
	e.Drain(w)
	assert.Equal(t, int64(0), after.Load(), "step after the child ran")
}

func testRunWorkflowParentDeadline(t *testing.T, e *Env) {
	child := builder.Workflow("long_child").Then("long_step")
	b := builder.Workflow("deadlined").ExecutionTimeout(time.Hour).RunWorkflow("long_child", child).Then("after")
	id := e.startB(b, queuety.State{"k": "v"})
	var after atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("after", counter(&after, nil))
	e.Drain(w)
	kid := e.oneChild(id)
	assert.True(t, kid.DeadlineAt.IsZero(), "the child got the parent's deadline")
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 1, e.sweep(), "workflows expired")
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "parent status")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "parent error")
	kidRow := e.Workflow(kid.ID)
	assert.Equal(t, queuetytype.WorkflowRunning, kidRow.Status, "child status after the parent's deadline")
	kidJob := e.OneJob(driver.JobFilter{WorkflowID: kid.ID})
	assert.Equal(t, queuetytype.JobPending, kidJob.Status, "child step job after the parent's deadline")

	w.HandleStep("long_step", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"long_done": true}, nil
	})
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(kid.ID).Status, "child completed")
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "parent stays failed")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "parent error")
	assert.Equal(t, 0, wf.CurrentStep, "parent step")
	assert.Equal(t, int64(0), after.Load(), "step after the child ran")
	_, merged := e.State(id)["long_done"]
	assert.False(t, merged, "child state merged into the failed parent")
}

// kid is a one-step workflow for StartWorkflows.
func kidFlow() *builder.Builder { return builder.Workflow("kid").Then("kid_step") }

// kidStep echoes a started workflow's item.
func kidStep(_ context.Context, s queuety.State) (queuety.State, error) {
	i, _ := s.Int("start_item_index")
	return queuety.State{"handled": fmt.Sprintf("%v#%d", s["sku"], i)}, nil
}

func testStartWorkflowsGroup(t *testing.T, e *Env) {
	b := builder.Workflow("batch").
		StartWorkflows("orders", kidFlow(), builder.Group("kids"), builder.Name("start")).
		WaitForWorkflowGroup("kids", builder.ResultKey("kid_results")).
		Then("after")
	items := []any{map[string]any{"sku": "A"}, map[string]any{"sku": "B"}, map[string]any{"sku": "C"}}
	id := e.startB(b, queuety.State{"orders": items, "batch_no": 4})
	var afterSaw atomic.Value
	w := e.Worker(nil)
	w.HandleStep("after", func(_ context.Context, s queuety.State) (queuety.State, error) {
		m, _ := s["kid_results"].(map[string]any)
		afterSaw.Store(len(m))
		return nil, nil
	})
	e.Drain(w) // no kid handler: the parent parks
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, wf.Status, "parent status")
	assert.Equal(t, 1, wf.CurrentStep, "parent step")
	st := e.State(id)
	ids := asList(t, st["started_workflow_ids"], "started_workflow_ids")
	require.Len(t, ids, 3, "started ids")
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowWaiting, 1), "workflow_waiting events")
	d := e.describe(id)
	require.NotNil(t, d.Wait, "describe: wait")
	assert.Equal(t, "workflow", d.Wait.Type, "describe: wait type")
	assert.Len(t, d.Wait.WaitingFor, 3, "describe: waiting for")
	assert.Len(t, d.Steps[0].Children, 3, "describe: started children")
	for i, v := range ids {
		kid := e.Workflow(v.(int64))
		assert.Equal(t, "kid", kid.Name, "kid name")
		assert.Zero(t, kid.ParentWorkflowID, "a started workflow is not a run_workflow child")
		kst := e.State(kid.ID)
		assert.Equal(t, int64(i), kst["start_item_index"], "start_item_index")
		assert.Equal(t, int64(4), kst["batch_no"], "parent state inherited")
		_, hasItems := kst["orders"]
		assert.False(t, hasItems, "the items key is not inherited")
		kd := e.describe(kid.ID)
		assert.Equal(t, id, kd.StartedBy, "describe: started_by")
	}

	w.HandleStep("kid_step", kidStep)
	e.Drain(w)
	wf = e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent status (error %q)", wf.ErrorMessage)
	assert.Equal(t, 3, afterSaw.Load(), "after saw the kid results")
	results := asMap(t, e.State(id)["kid_results"], "kid_results")
	require.Len(t, results, 3, "kid results")
	for i, v := range ids {
		key := strconv.FormatInt(v.(int64), 10)
		r := asMap(t, results[key], "kid result "+key)
		assert.Equal(t, fmt.Sprintf("%s#%d", items[i].(map[string]any)["sku"], i), r["handled"], "kid %s result", key)
	}
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowResumed, 1), "workflow_resumed events")
}

func testStartWorkflowsPayload(t *testing.T, e *Env) {
	b := builder.Workflow("mixed").
		StartWorkflows("items", kidFlow(), builder.PayloadKey("product"), builder.ResultKey("kids"))
	id := e.startB(b, queuety.State{"items": []any{map[string]any{"sku": "A", "qty": 2}, "B", 7}, "tenant": "acme"})
	e.Drain(e.Worker(nil))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent status (error %q)", wf.ErrorMessage)
	ids := asList(t, e.State(id)["kids"], "kids")
	require.Len(t, ids, 3, "started ids")
	want := []queuety.State{
		{"tenant": "acme", "sku": "A", "qty": int64(2), "start_item_index": int64(0)},
		{"tenant": "acme", "product": "B", "start_item_index": int64(1)},
		{"tenant": "acme", "product": int64(7), "start_item_index": int64(2)},
	}
	for i, v := range ids {
		assert.Equalf(t, want[i], e.State(v.(int64)), "initial state of started workflow %d", i)
	}

	b = builder.Workflow("isolated").
		StartWorkflows("items", kidFlow(), builder.InheritState(false))
	id = e.startB(b, queuety.State{"items": []any{"x"}, "secret": "parent-only"})
	e.Drain(e.Worker(nil))
	ids = asList(t, e.State(id)["started_workflow_ids"], "started_workflow_ids")
	require.Len(t, ids, 1, "started ids")
	assert.Equal(t, queuety.State{"item": "x", "start_item_index": int64(0)}, e.State(ids[0].(int64)), "initial state without inheritance")
}

func testStartWorkflowsBudget(t *testing.T, e *Env) {
	b := builder.Workflow("capped_starts").MaxStartedWorkflows(2).
		StartWorkflows("items", kidFlow(), builder.Name("fan")).Then("after")
	id := e.startB(b, queuety.State{"items": []any{"a", "b", "c"}})
	e.Drain(e.Worker(nil))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, "would exceed max_started_workflows budget of 2", "error")
	assert.Len(t, e.Workflows(driver.WorkflowFilter{}), 1, "workflows (none started)")
	ph := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerStartWorkflows})
	assert.Equal(t, queuetytype.JobBuried, ph.Status, "placeholder")
	assert.Equal(t, 1, ph.Attempts, "placeholder attempts (a budget breach is final)")
}

// deps dispatches one single-step dependency workflow per handler.
func (e *Env) deps(handlers ...string) []int64 {
	ids := make([]int64, len(handlers))
	for i, h := range handlers {
		ids[i] = e.startB(builder.Workflow("dep_"+h).MaxAttempts(1).Then(h), queuety.State{"dep": h})
	}
	return ids
}

// finishDep runs a dependency's step by hand: success with out, or failure.
func (e *Env) finishDep(handler string, out queuety.State, cause error) {
	e.T.Helper()
	cj := e.ClaimOne(handler)
	require.NoError(e.T, e.finish(cj[0], out, cause, nil))
}

// waiter dispatches a workflow waiting on ids, with an "after" step, and
// returns it with a worker that runs only the waiter's steps.
func (e *Env) waiter(ids []int64, after *atomic.Int64, opts ...builder.StepOption) (int64, *worker.Worker) {
	b := builder.Workflow("waiter").WaitForWorkflows(ids, opts...).Then("after")
	id := e.startB(b, queuety.State{"waiter": true})
	w := e.Worker(nil)
	w.HandleStep("after", counter(after, nil))
	return id, w
}

func testWaitAny(t *testing.T, e *Env) {
	ids := e.deps("dep_a", "dep_b", "dep_c")
	var after atomic.Int64
	id, w := e.waiter(ids, &after, builder.Any())
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowWaitingForWorkflows, wf.Status, "status")
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowWaiting, 0), "workflow_waiting events")
	deps := e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerWaitForWorkflows})
	require.Len(t, deps, 1, "wait jobs")
	e.finishDep("dep_b", queuety.State{"b_result": 2}, nil)
	e.Drain(w)
	wf = e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(1), after.Load(), "after ran")
	st := e.State(id)
	assert.Equal(t, int64(2), st["b_result"], "first completed dependency merged")
	assert.Equal(t, "dep_b", st["dep"], "first completed dependency merged")
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowResumed, 0), "workflow_resumed events")
	// Later dependency ends change nothing.
	e.finishDep("dep_a", queuety.State{"a_result": 1}, nil)
	e.finishDep("dep_c", nil, errors.New("c failed"))
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, int64(1), after.Load(), "after ran")
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowResumed, 0), "workflow_resumed events")
	_, late := e.State(id)["a_result"]
	assert.False(t, late, "a later dependency merged")
}

func testWaitQuorum(t *testing.T, e *Env) {
	ids := e.deps("dep_a", "dep_b", "dep_c")
	var after atomic.Int64
	id, w := e.waiter(ids, &after, builder.Quorum(2), builder.ResultKey("deps"))
	e.Drain(w)
	e.finishDep("dep_a", queuety.State{"n": 1}, nil)
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(id).Status, "status after one of two")
	e.finishDep("dep_b", nil, errors.New("b failed"))
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(id).Status, "status after a failure (the quorum is still possible)")
	e.finishDep("dep_c", queuety.State{"n": 3}, nil)
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(1), after.Load(), "after ran")
	deps := asMap(t, e.State(id)["deps"], "deps")
	assert.Len(t, deps, 2, "completed dependencies under the result key")
	assert.Contains(t, deps, strconv.FormatInt(ids[0], 10), "dep a")
	assert.Contains(t, deps, strconv.FormatInt(ids[2], 10), "dep c")
	assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowResumed, 0), "workflow_resumed events")
}

func testWaitAllFailure(t *testing.T, e *Env) {
	ids := e.deps("dep_a", "dep_b")
	var after atomic.Int64
	id, w := e.waiter(ids, &after)
	e.Drain(w)
	e.finishDep("dep_a", nil, nil)
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(id).Status, "status after one of two")
	e.finishDep("dep_b", nil, errors.New("b failed"))
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Workflow wait could not be satisfied.", wf.ErrorMessage, "error")
	assert.Equal(t, int64(0), after.Load(), "after ran")
	_, wait := e.rawState(id).Get("_wait")
	assert.False(t, wait, "_wait left in the state")
}

func testWaitAlreadyDone(t *testing.T, e *Env) {
	ids := e.deps("dep_a")
	e.finishDep("dep_a", queuety.State{"early": true}, nil)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(ids[0]).Status, "dependency")
	var after atomic.Int64
	id, w := e.waiter(ids, &after)
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(1), after.Load(), "after ran")
	assert.Equal(t, true, e.State(id)["early"], "dependency state merged")
	assert.Equal(t, 0, e.countEvents(id, driver.EventWorkflowWaiting, -1), "workflow_waiting events (never parked)")
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerWaitForWorkflows}), 1, "wait jobs")
}

func testWaitIn(t *testing.T, e *Env) {
	ids := e.deps("dep_a")
	b := builder.Workflow("waiter_in").WaitForWorkflowIn("dep_id", builder.ResultKey("dep_state")).Then("after")
	id := e.startB(b, queuety.State{"dep_id": ids[0]})
	var after atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("after", counter(&after, nil))
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(id).Status, "status")
	d := e.describe(id)
	require.NotNil(t, d.Wait, "describe: wait")
	assert.Equal(t, []string{strconv.FormatInt(ids[0], 10)}, d.Wait.WaitingFor, "describe: waiting for")
	e.finishDep("dep_a", queuety.State{"total": 99}, nil)
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, queuety.State{"dep": "dep_a", "total": int64(99)}, queuety.State(asMap(t, e.State(id)["dep_state"], "dep_state")),
		"the one dependency's state under the result key")
}

func testWaitConcurrent(t *testing.T, e *Env) {
	const n = 20
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = e.startB(builder.Workflow("dep").Then("dep_work"), queuety.State{"n": i})
	}
	all := e.startB(builder.Workflow("wait_all").WaitForWorkflows(ids, builder.ResultKey("deps")).Then("after_all"), nil)
	anyID := e.startB(builder.Workflow("wait_any").WaitForWorkflows(ids, builder.Any(), builder.ResultKey("first")).Then("after_any"), nil)
	var afterAll, afterAny atomic.Int64
	clients := e.Clients(8)
	workers := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		w := e.Worker(c, worker.Concurrency(4))
		w.HandleStep("dep_work", func(_ context.Context, s queuety.State) (queuety.State, error) {
			k, _ := s.Int("n")
			return queuety.State{"square": k * k}, nil
		})
		w.HandleStep("after_all", counter(&afterAll, nil))
		w.HandleStep("after_any", counter(&afterAny, nil))
		workers[i] = w
	}
	e.drainUntil(workers, clients, func(c *queuety.Client) bool {
		for _, id := range []int64{all, anyID} {
			wf, err := c.Workflow(context.Background(), id)
			if err != nil || !terminal(wf.Status) {
				return false
			}
		}
		return true
	})
	for _, id := range []int64{all, anyID} {
		wf := e.Workflow(id)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "waiter %d status (error %q)", id, wf.ErrorMessage)
		assert.Equal(t, 1, e.countEvents(id, driver.EventWorkflowResumed, -1), "waiter %d workflow_resumed events", id)
		assert.LessOrEqual(t, e.countEvents(id, driver.EventWorkflowWaiting, -1), 1, "waiter %d workflow_waiting events", id)
		for _, j := range e.Jobs(driver.JobFilter{WorkflowID: id}) {
			assert.NotContainsf(t, []queuetytype.JobStatus{queuetytype.JobPending, queuetytype.JobProcessing}, j.Status, "waiter %d job %d (%s)", id, j.ID, j.Handler)
		}
	}
	assert.Equal(t, int64(1), afterAll.Load(), "after_all calls")
	assert.Equal(t, int64(1), afterAny.Load(), "after_any calls")
	deps := asMap(t, e.State(all)["deps"], "deps")
	assert.Len(t, deps, n, "dependency states")
	for i, id := range ids {
		r := asMap(t, deps[strconv.FormatInt(id, 10)], "dep state")
		assert.Equal(t, int64(i*i), r["square"], "dep %d state", id)
	}
	assert.Len(t, asMap(t, e.State(anyID)["first"], "first"), 1, "any: one dependency state")
}
