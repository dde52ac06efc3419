// Package builder is the fluent way to define and dispatch a workflow: a
// list of steps that run one after another, with the state each step
// returns merged into the next one's input.
//
// It is the Go form of Queuety's WorkflowBuilder (Queuety::workflow(...)),
// and it writes the same rows: a workflow dispatched here can be run,
// inspected and operated by Queuety PHP, and the other way round. The Queuety
// documentation's data-import example reads, in Go:
//
//	id, err := builder.Workflow("data_import").
//	    Then("fetch_data").
//	    Then("transform_data", builder.StartToClose(5*time.Minute), builder.Retry(3)).
//	    Then("load_data").
//	    MustCompleteWithin(0, 24, 0, 0).
//	    OnDeadline("import_timeout").
//	    Dispatch(ctx, q, queuety.State{"source": url})
//
// The step names ("fetch_data", ...) are handler names, registered on a
// worker with HandleStep; PHP class names such as "App\\Steps\\FetchData"
// work too. The deadline callback ("import_timeout") is registered with
// HandleDeadline.
//
// # Steps
//
//   - Then runs one handler (Queuety's then()).
//   - Parallel and ParallelWith run several handlers at once and continue
//     when all of them have finished (parallel()).
//   - Sleep is a durable timer (delay()): no worker is busy while it runs.
//   - WaitForSignal parks the workflow until a signal arrives
//     (wait_for_signal()), optionally giving up after a Timeout.
//   - ForEach runs one branch job per item of a state list and settles when
//     all, the first, or a Quorum of them succeed (for_each()); a Reducer
//     folds the branches' results into the state.
//   - RepeatWhile and RepeatUntil jump back to an earlier step while, or
//     until, a Condition holds: StateIs(key, value) or a registered
//     ConditionNamed (repeat_while(), repeat_until()).
//   - RunWorkflow runs a child workflow and waits for it (run_workflow()).
//   - StartWorkflows starts one independent workflow per item of a state
//     list and records their ids, optionally in a Group (start_workflows()).
//   - WaitForWorkflow, WaitForWorkflowIn, WaitForWorkflows,
//     WaitForWorkflowsIn and WaitForWorkflowGroup park the workflow until
//     other workflows have completed: all of them, Any one, or a Quorum
//     (wait_for_workflow(), wait_for_workflows(),
//     wait_for_workflow_group()).
//
// Step options (Name, Queue, Retry, StartToClose, ...) tune one step; the
// workflow-wide settings (OnQueue, WithPriority, MaxAttempts, deadlines,
// callbacks and the MaxForEachItems and MaxStartedWorkflows budgets) are
// methods on the Builder.
//
// # Errors
//
// Builder methods never fail and never panic. The first mistake the builder
// can see in its own arguments (a negative Sleep, a deadline of zero, a
// ResultKey on a Then step, ...) is remembered and returned by Definition
// and Dispatch, wrapping queuety.ErrInvalidArgument or
// queuety.ErrInvalidTimeout. Everything else about the definition (empty or
// duplicate names, too many steps, priorities and attempt counts out of
// range, timeouts under one second) is checked once, by the engine, when
// the workflow is dispatched, and is reported with the same sentinels.
// Nothing is written when dispatch fails.
//
// # Reuse
//
// Methods change the Builder and return it, so a chain builds one
// definition. A finished Builder can be dispatched any number of times,
// also from several goroutines as long as nobody changes it meanwhile: each
// Dispatch starts a new workflow from its own copy of the definition,
// unless an IdempotencyKey is set, in which case every dispatch after the
// first returns the first workflow's id.
package builder
