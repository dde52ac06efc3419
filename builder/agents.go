package builder

// Defaults of the agent steps, as in Queuety's start_agents(),
// wait_for_agents() and wait_for_agent_group().
const (
	// AgentWorkflowIDsKey is the state key StartAgents stores the started
	// agent workflows' ids under, and WaitForAgents reads them from.
	AgentWorkflowIDsKey = "agent_workflow_ids"
	// AgentTaskKey is the state key a non-object agent task is stored
	// under in its agent workflow's initial state.
	AgentTaskKey = "agent_task"
	// AgentResultsKey is the state key the agent waits store the agent
	// workflows' final states under.
	AgentResultsKey = "agent_results"
	// AgentGroup is the group WaitForAgentGroup waits for by default.
	AgentGroup = "agents"
)

// StartAgents is StartWorkflows with the defaults of Queuety's
// start_agents(), for planner/executor flows: one agent workflow from
// child per task in the list under itemsKey, their ids stored under
// AgentWorkflowIDsKey, a non-object task stored under AgentTaskKey, the
// parent's public state inherited, and the step named "start_agents". The
// options of StartWorkflows override any of these; Group(AgentGroup) lets
// a later WaitForAgentGroup("") find them.
func (b *Builder) StartAgents(itemsKey string, child *Builder, opts ...StepOption) *Builder {
	defaults := []StepOption{Name("start_agents"), ResultKey(AgentWorkflowIDsKey), PayloadKey(AgentTaskKey)}
	return b.StartWorkflows(itemsKey, child, append(defaults, opts...)...)
}

// WaitForAgents is WaitForWorkflowsIn with the defaults of Queuety's
// wait_for_agents(): it waits for the agent workflows whose ids are in the
// state under stateKey (AgentWorkflowIDsKey when empty, where StartAgents
// puts them), stores their final states under AgentResultsKey, and is
// named "wait_for_agents". Options: Name, ResultKey (ResultKey("") merges
// the states instead), Any and Quorum. To wait for fixed ids, use
// WaitForWorkflows with these options.
func (b *Builder) WaitForAgents(stateKey string, opts ...StepOption) *Builder {
	if stateKey == "" {
		stateKey = AgentWorkflowIDsKey
	}
	defaults := []StepOption{Name("wait_for_agents"), ResultKey(AgentResultsKey)}
	return b.WaitForWorkflowsIn(stateKey, append(defaults, opts...)...)
}

// WaitForAgentGroup is WaitForWorkflowGroup with the defaults of Queuety's
// wait_for_agent_group(): it waits for the agent workflows a StartAgents
// (or StartWorkflows) step recorded under group (AgentGroup when empty),
// stores their final states under AgentResultsKey, and is named
// "wait_for_agent_group". Options as WaitForAgents.
func (b *Builder) WaitForAgentGroup(group string, opts ...StepOption) *Builder {
	if group == "" {
		group = AgentGroup
	}
	defaults := []StepOption{Name("wait_for_agent_group"), ResultKey(AgentResultsKey)}
	return b.WaitForWorkflowGroup(group, append(defaults, opts...)...)
}
