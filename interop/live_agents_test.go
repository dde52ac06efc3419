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

// TestLiveAgentAliases: start_agents, wait_for_agents and
// wait_for_agent_group built by Queuety PHP and StartAgents, WaitForAgents
// and WaitForAgentGroup built by the Go builder store the same state byte
// for byte; the Go engine runs the PHP-dispatched planner and Queuety PHP
// runs a Go-dispatched one, to the same results.
func TestLiveAgentAliases(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	out := php.eval(`use Queuety\Queuety; use Queuety\Enums\WaitMode;
echo Queuety::workflow('planner')
	->start_agents('tasks', Queuety::workflow('agent')->then('QueuetyGoInterop\ChildWork'), group_key: 'agents')
	->wait_for_agents()
	->wait_for_agent_group(mode: WaitMode::Quorum, quorum: 2, result_key: 'by_group')
	->then('QueuetyGoInterop\Finish')
	->dispatch(['quarter' => 'Q3', 'tasks' => [['n' => 1], ['n' => 2]]]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	goDispatch := func() int64 {
		t.Helper()
		id, err := builder.Workflow("planner").
			StartAgents("tasks", builder.Workflow("agent").Then(`QueuetyGoInterop\ChildWork`), builder.Group(builder.AgentGroup)).
			WaitForAgents("").
			WaitForAgentGroup("", builder.Quorum(2), builder.ResultKey("by_group")).
			Then(`QueuetyGoInterop\Finish`).
			Dispatch(ctx, c, queuety.State{"tasks": []any{map[string]any{"n": 1}, map[string]any{"n": 2}}, "quarter": "Q3"})
		require.NoError(t, err)
		return id
	}
	goID := goDispatch()
	phpWF, err := c.Workflow(ctx, phpID)
	require.NoError(t, err)
	goWF, err := c.Workflow(ctx, goID)
	require.NoError(t, err)
	assert.Equal(t, string(phpWF.State), string(goWF.State), "stored state at dispatch, PHP's (expected) and Go's (actual)")

	// Go runs both; then PHP runs a second Go-dispatched planner.
	w := interopWorker(c)
	w.HandleStep(`QueuetyGoInterop\ChildWork`, func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("n")
		return queuety.State{"child_value": n * 10, "child_done": true}, nil
	})
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	phpRun := goDispatch()
	for range 5 {
		if st, _ := c.Workflow(ctx, phpRun); st.Status.Terminal() {
			break
		}
		php.run("work")
	}
	var results []map[string]any
	for _, id := range []int64{phpID, goID, phpRun} {
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "planner %d (error %q)", id, wf.ErrorMessage)
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		ids, _ := st["agent_workflow_ids"].([]any)
		require.Len(t, ids, 2, "planner %d agent ids", id)
		got := map[string]any{}
		for _, key := range []string{"agent_results", "by_group"} {
			m, _ := st[key].(map[string]any)
			for i, aid := range ids {
				r, _ := m[strconv.FormatInt(aid.(int64), 10)].(map[string]any)
				got[key+strconv.Itoa(i)] = r["child_value"]
			}
		}
		results = append(results, got)
	}
	assert.Equal(t, map[string]any{"agent_results0": int64(10), "agent_results1": int64(20), "by_group0": int64(10), "by_group1": int64(20)},
		results[0], "PHP's planner, run by Go")
	assert.Equal(t, results[0], results[1], "Go's planner, run by Go")
	assert.Equal(t, results[0], results[2], "Go's planner, run by PHP")
}
