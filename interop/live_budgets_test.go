package interop_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestLiveBudgetsAndPruning: a workflow with every budget and
// prune_state_after, dispatched by Queuety PHP and by the Go builder,
// stores the same state byte for byte (definition hash included); Go
// workers run PHP's, pruning its state as PHP would; and PHP fails a
// Go-dispatched workflow on the budget Go wrote.
func TestLiveBudgetsAndPruning(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)

	out := php.eval(`echo \Queuety\Queuety::workflow('guarded')
		->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Finish')
		->prune_state_after(1)->max_transitions(5)->max_state_bytes(1000)->max_cost_units(7)
		->dispatch(['x' => 1]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	goID, err := builder.Workflow("guarded").
		Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Finish`).
		PruneStateAfter(1).MaxTransitions(5).MaxStateBytes(1000).MaxCostUnits(7).
		Dispatch(ctx, c, queuety.State{"x": 1})
	require.NoError(t, err)
	phpWF, err := c.Workflow(ctx, phpID)
	require.NoError(t, err)
	goWF, err := c.Workflow(ctx, goID)
	require.NoError(t, err)
	assert.Equal(t, string(phpWF.State), string(goWF.State), "stored state at dispatch, PHP's (expected) and Go's (actual)")

	w := interopWorker(c)
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	for _, id := range []int64{phpID, goID} {
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		// prune_state_after(1): after step 2 the outputs of steps 0 and 1
		// ("counter") are gone; the initial x stays.
		assert.Equal(t, queuety.State{"x": int64(1), "finished": true}, st, "workflow %d public state", id)
	}
	phpDone, err := c.Workflow(ctx, phpID)
	require.NoError(t, err)
	goDone, err := c.Workflow(ctx, goID)
	require.NoError(t, err)
	assert.Equal(t, string(phpDone.State), string(goDone.State), "stored state when completed")

	// PHP enforces the budget Go wrote: max_transitions(1) fails on the
	// second transition, run by PHP's worker.
	tight, err := builder.Workflow("tight").Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Increment`).
		MaxTransitions(1).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	php.run("work")
	wf, err := c.Workflow(ctx, tight)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status after PHP ran it")
	assert.Equal(t, "Workflow exceeded max_transitions budget of 1.", wf.ErrorMessage, "error PHP wrote")
}
