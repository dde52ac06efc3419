package storetest

// Batched expansions: the for_each placeholders of several workflows
// recorded in one CompleteSteps call are expanded together, each as if
// alone: a repeated (stale) attempt never expands twice, and a
// placeholder whose step settles at once (no items) goes through the
// one-by-one path beside the batch.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("ForEach/BatchedExpansionsOneStaleOneSettledAtOnce", testForEachBatchedExpansions)
}

func testForEachBatchedExpansions(t *testing.T, e *Env) {
	b := builder.Workflow("batched_expand").ForEach("items", "item", builder.ResultKey("out")).Then("after")
	a := e.startB(b, queuety.State{"items": []any{"a0", "a1", "a2"}})
	empty := e.startB(b, queuety.State{"items": []any{}})
	c := e.startB(b, queuety.State{"items": []any{"c0"}})
	ph := e.Claim(3, engine.HandlerForEach)
	require.Len(t, ph, 3, "placeholders")
	byWF := map[int64]*engine.Claimed{}
	for _, cj := range ph {
		byWF[cj.Job.WorkflowID] = cj
	}
	require.NoError(t, e.completeSteps(e.success(byWF[c], nil))[0], "c's placeholder alone")
	errs := e.completeSteps(e.success(byWF[a], nil), e.success(byWF[empty], nil), e.success(byWF[c], nil))
	assert.NoError(t, errs[0], "a's placeholder")
	assert.NoError(t, errs[1], "the empty workflow's placeholder")
	assert.ErrorIs(t, errs[2], queuetytype.ErrStaleAttempt, "c's placeholder again")

	for _, cj := range ph {
		assert.Equalf(t, queuetytype.JobCompleted, e.Job(cj.Job.ID).Status, "placeholder of workflow %d", cj.Job.WorkflowID)
	}
	for _, id := range []int64{a, c} {
		wf := e.Workflow(id)
		assert.Equalf(t, 0, wf.CurrentStep, "workflow %d waits for its branches (status %s, error %q)", id, wf.Status, wf.ErrorMessage)
		assert.Equalf(t, queuetytype.WorkflowRunning, wf.Status, "workflow %d", id)
		assert.Containsf(t, string(wf.State), `"initialized":true`, "workflow %d's for-each runtime", id)
		assert.Equalf(t, 1, e.countEvents(id, driver.EventStepStarted, 0), "step_started events of workflow %d", id)
	}
	ew := e.Workflow(empty)
	assert.Equal(t, 1, ew.CurrentStep, "the empty for-each settled at once (status %s, error %q)", ew.Status, ew.ErrorMessage)
	assert.Equal(t, 1, e.countEvents(empty, driver.EventStepCompleted, 0), "step_completed of the empty workflow")

	br := e.branchesOf("item", 4)
	assert.Len(t, br[a], 3, "branches of a")
	assert.Len(t, br[c], 1, "branches of c, expanded once")
	assert.Len(t, br[empty], 0, "branches of the empty workflow")
	assert.Len(t, e.Claim(10, "after"), 1, "the empty workflow's next step")
}
