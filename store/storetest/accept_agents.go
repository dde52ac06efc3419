package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func init() {
	register("StartWorkflows/AgentAliases", testAgentAliases)
}

// testAgentAliases: StartAgents, WaitForAgents and WaitForAgentGroup run
// as start_workflows and wait_for_workflows steps with Queuety's agent
// defaults: ids under agent_workflow_ids, scalar tasks under agent_task,
// results under agent_results, the steps named start_agents,
// wait_for_agents and wait_for_agent_group.
func testAgentAliases(t *testing.T, e *Env) {
	agent := builder.Workflow("agent").Then("research")
	b := builder.Workflow("planner").
		StartAgents("tasks", agent, builder.Group(builder.AgentGroup)).
		WaitForAgents("").
		WaitForAgentGroup("", builder.ResultKey("by_group"), builder.Quorum(2))
	id := e.startB(b, queuety.State{"tasks": []any{"pricing", map[string]any{"topic": "churn"}}, "quarter": "Q3"})
	w := e.Worker(nil)
	w.HandleStep("research", func(_ context.Context, s queuety.State) (queuety.State, error) {
		topic, _ := s["agent_task"].(string)
		if topic == "" {
			topic, _ = s["topic"].(string)
		}
		return queuety.State{"finding": topic + "@" + s["quarter"].(string)}, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "planner status (error %q)", wf.ErrorMessage)
	st := e.State(id)
	ids := asList(t, st["agent_workflow_ids"], "agent_workflow_ids")
	require.Len(t, ids, 2, "agent ids")
	assert.Equal(t, queuety.State{"agent_task": "pricing", "quarter": "Q3", "start_item_index": int64(0), "finding": "pricing@Q3"},
		e.State(ids[0].(int64)), "a scalar task under agent_task")
	for _, key := range []string{"agent_results", "by_group"} {
		results := asMap(t, st[key], key)
		require.Len(t, results, 2, key)
		r := asMap(t, results[strconv.FormatInt(ids[1].(int64), 10)], key+" of the second agent")
		assert.Equal(t, "churn@Q3", r["finding"], key)
	}
	v, _ := e.rawState(id).Get("_steps")
	steps := string(mustMarshal(t, v))
	for _, want := range []string{
		`{"type":"start_workflows","name":"start_agents","items_key":"tasks","result_key":"agent_workflow_ids","payload_key":"agent_task","inherit_state":true,"group_key":"agents","workflow_definition":{"name":"agent"`,
		`{"type":"wait_for_workflows","name":"wait_for_agents","workflow_ids":null,"workflow_id_key":"agent_workflow_ids","workflow_group_key":null,"wait_mode":"all","quorum":null,"result_key":"agent_results","compensation":null}`,
		`{"type":"wait_for_workflows","name":"wait_for_agent_group","workflow_ids":null,"workflow_id_key":null,"workflow_group_key":"agents","wait_mode":"quorum","quorum":2,"result_key":"by_group","compensation":null}`,
	} {
		assert.Contains(t, steps, want, "encoded as Queuety's agent steps")
	}
}
