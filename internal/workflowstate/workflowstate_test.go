package workflowstate_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// storedState reads workflow id's state as the engine stored it, with its
// private keys.
func storedState(t *testing.T, c *queuety.Client, id int64) *phpjson.Object {
	t.Helper()
	wf, err := c.Workflow(context.Background(), id)
	require.NoError(t, err)
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	require.NoError(t, err)
	return state
}

// TestReadsWhatTheEngineWrites runs a workflow on the test server (a
// for-each step over three items, then an approval wait) and reads the
// state the engine stored with this package: the inherited job fields, the
// settled for-each runtime and its aggregate, the answers the wait takes;
// after the approval, the merged signal and the answered wait.
func TestReadsWhatTheEngineWrites(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	b := builder.Workflow("state_format").OnQueue("wq").WithPriority(queuetytype.PriorityHigh).MaxAttempts(4).
		ForEach("items", "check", builder.ResultKey("checks")).
		WaitForApproval().
		Then("after")
	id, err := b.Dispatch(ctx, c, queuety.State{"items": []any{"a", "b", "c"}})
	require.NoError(t, err)

	w := worker.New(c, worker.NoMaintenance(), worker.Queues("wq"), worker.Concurrency(1), worker.WithLogger(quiet))
	w.HandleForEach("check", func(context.Context, queuety.State, any, int) (queuety.State, error) {
		return queuety.State{"ok": true}, nil
	})
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)

	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, wf.Status, "the workflow waits for approval (error %q)", wf.ErrorMessage)
	state := storedState(t, c, id)

	assert.Equal(t, "wq", workflowstate.Queue(state), "queue")
	assert.Equal(t, queuetytype.PriorityHigh, workflowstate.Priority(state), "priority")
	assert.Equal(t, 4, workflowstate.MaxAttempts(state), "max attempts")
	assert.Equal(t, []string{"items", "checks"}, workflowstate.PublicState(state).Keys(), "public keys")

	_, rt := workflowstate.LoadForEach(state, 0)
	require.NotNil(t, rt, "the for-each step has a runtime")
	assert.True(t, rt.Settled(), "settled")
	assert.Equal(t, []any{"a", "b", "c"}, rt.Items, "items")
	assert.Equal(t, 3, rt.Results.Len(), "results")
	assert.Zero(t, rt.Failures.Len(), "failures")
	assert.Empty(t, rt.Missing(), "no branch is open")
	_, none := workflowstate.LoadForEach(state, 1)
	assert.Nil(t, none, "the wait step has no for-each runtime")

	agg, ok := state.Get("checks")
	require.True(t, ok, "the aggregate is stored under the result key")
	res := workflowstate.DecodeForEachResult(agg.(*phpjson.Object))
	assert.Equal(t, "all", res.Mode)
	assert.Equal(t, 3, res.Total)
	assert.Equal(t, 3, res.Succeeded)
	assert.Zero(t, res.Failed)
	require.Len(t, res.Results, 3)
	for i, r := range res.Results {
		assert.Equal(t, i, r.Index, "results are in item order")
		assert.Equal(t, map[string]any{"ok": true}, r.Output, "branch %d output", i)
	}

	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	require.Len(t, steps, 3)
	wait := steps[1]
	assert.Equal(t, []string{workflowstate.AnswerApprove}, workflowstate.WaitAnswers(wait), "an approval wait takes approve")
	assert.Equal(t, "approval", workflowstate.AnswerSignal(wait, workflowstate.AnswerApprove))
	assert.Empty(t, workflowstate.AnswerSignal(wait, workflowstate.AnswerReject), "an approval wait cannot be rejected")

	_, err = c.Approve(ctx, id, queuety.State{"by": "ops"})
	require.NoError(t, err)
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	wf, err = c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "error %q", wf.ErrorMessage)
	state = storedState(t, c, id)
	approval, ok := state.Get("approval")
	require.True(t, ok, "the approval is merged under the wait's result key")
	assert.Equal(t, `{"by":"ops"}`, string(workflowstate.EncodeJSON(approval)))
	merged := workflowstate.SignalOutput(wait, map[string]*phpjson.Object{"approval": objectOf(t, `{"by":"ops"}`)}, false)
	assert.Equal(t, `{"approval":{"by":"ops"}}`, string(workflowstate.EncodeJSON(merged)), "what the wait merges")
}

// objectOf decodes a JSON object.
func objectOf(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	o, err := workflowstate.DecodeObject("test", []byte(s))
	require.NoError(t, err)
	return o
}

// TestMergeOutput: a step's output overwrites top-level keys, drops its
// private keys except _workflow_groups and _repeat_steps, and keeps the
// order of the keys the state had.
func TestMergeOutput(t *testing.T) {
	state := objectOf(t, `{"a":1,"b":{"x":1},"_queue":"q"}`)
	workflowstate.MergeOutput(state, objectOf(t, `{"b":{"y":2},"c":3,"_secret":1,"_repeat_steps":{"1":{"iterations":2}}}`), 0)
	assert.Equal(t, `{"a":1,"b":{"y":2},"_queue":"q","c":3,"_repeat_steps":{"1":{"iterations":2}}}`,
		string(workflowstate.EncodeJSON(state)))
	assert.Equal(t, int64(2), workflowstate.RepeatIterations(state, 1), "the merged repeat counter reads back")
	assert.Equal(t, "q", workflowstate.Queue(state))
}

// TestBudgets: counters move only when the workflow has a budget, and
// Breach names the first budget a state exceeds.
func TestBudgets(t *testing.T) {
	none := objectOf(t, `{}`)
	workflowstate.BumpCounter(none, "transitions", 5)
	assert.Zero(t, workflowstate.Counter(none, "transitions"), "no budget, no counter")
	assert.Nil(t, workflowstate.Breach(none))

	state := objectOf(t, `{"_workflow_budget":{"max_transitions":2,"max_cost_units":10}}`)
	workflowstate.BumpCounter(state, "transitions", 2)
	workflowstate.AddCostUnits(state, 4)
	assert.Nil(t, workflowstate.Breach(state), "at the limit is within it")
	workflowstate.BumpCounter(state, "transitions", 1)
	b := workflowstate.Breach(state)
	require.NotNil(t, b)
	assert.Equal(t, "Workflow exceeded max_transitions budget of 2.", b.Error())
	assert.Equal(t, `Queuety\Exceptions\WorkflowConstraintViolationException`, b.ErrorClass())
}
