// Package queuety is the API applications use: Open a store by DSN, then
// dispatch jobs and step workflows, signal and operate on them, and read
// their state through the Client. Rows are Queuety's own, so Go and
// Queuety PHP share one database.
//
//	q, err := queuety.Open(ctx, "mysql://user:pass@127.0.0.1:3306/wordpress?prefix=wp_")
//	id, err := q.Dispatch(ctx, "send_email", queuety.State{"to": addr}, queuety.OnQueue("mail"))
//
// The rows, enums and errors the Client returns and takes (jobs,
// workflows, schedules, batches, log and failure rows, JobStatus,
// Priority, the workflow description, TimeoutError, ErrNotFound and the
// other sentinel errors) are defined in package queuetytype, which this
// package and the store seam share.
//
// # Open a client
//
// Open opens the store a DSN names (import the store package for its
// scheme: store/mysql, store/sqlite) and applies migrations; Option
// values (WithLogger, WithClock, WithObserver, SkipMigrate, ...) configure
// it. A store written outside this module registers a driver for its own
// scheme with driver.Register and is opened the same way.
// Client.StoreInfo describes the store, Client.Migrate upgrades its
// tables, Client.Close closes it.
//
// # Dispatch jobs
//
// Client.Dispatch and Client.DispatchMany enqueue jobs; JobOption values
// (OnQueue, WithPriority, Delay, Retry with BackoffSeconds or
// BackoffPolicy, Unique, DependsOn, the activity timeouts, ConcurrencyGroup,
// CostUnits, RateLimit) shape each one. DispatchTx, DispatchManyTx and
// DispatchWorkflowTx write inside the caller's database/sql transaction.
//
// # Workflows
//
// A WorkflowDefinition is a list of WorkflowStep values, each of a
// queuetytype.StepType; package builder writes them fluently.
// Client.DispatchWorkflow starts one; Client.Signal, Approve, Reject and
// SubmitInput answer its waits. Handlers are registered by name in a
// Registry (package worker wraps one) as StepFunc, JobFunc, ForEachFunc,
// ReducerFunc, RepeatConditionFunc and CallbackFunc; a Middleware wraps
// them.
//
// Inside a handler, JobInfoFrom reads the attempt, Heartbeat reports
// progress, PutArtifact stores an output, StreamChunk and StreamedChunks
// make a durable streaming step, TraceInput, TraceOutput and TraceContext
// add trace metadata to its events, NonRetryable fails for good,
// Release puts the job back, and ContinueAsNew restarts the workflow.
// Timeouts surface as *queuetytype.TimeoutError (errors.As finds it),
// results from superseded attempts as queuetytype.ErrStaleAttempt.
//
// # Operate and read
//
// Jobs: Client.Job, ListJobs, RetryJob, RetryBuried, BuryJob, DeleteJob,
// RecoverStale, PurgeCompleted. Workflows: Client.Workflow, ListWorkflows,
// DescribeWorkflow, State, StateAt, TraceWorkflow, ExportWorkflow,
// PauseWorkflow, ResumeWorkflow, CancelWorkflow, RetryWorkflow,
// RewindWorkflow, ReplayWorkflow, ForkWorkflow. Queues: PauseQueue,
// ResumeQueue, Counts, QueueStates, QueueSummaries, OldestDueAges.
// History: Logs, Failures, FailurePage, HandlerMetrics, PurgeLogs,
// PruneWorkflowEvents, PurgeWorkflows.
// Artifacts: Client.PutArtifact, Artifact, Artifacts, DeleteArtifact.
// Webhooks: AddWebhook, Webhooks, RemoveWebhook, RotateWebhookSecret.
//
// # Schedules
//
// Client.Schedule and Client.ScheduleWorkflow return a ScheduleBuilder
// (an interval or cron expression, overlap and catch-up policies) whose
// Save writes the schedule; Schedules, ScheduleByID, SetScheduleEnabled,
// RunScheduleNow, RemoveSchedule and RemoveScheduleByHandler operate on
// them. Workers fire them.
//
// # Batches and chains
//
// Client.NewBatch returns a BatchBuilder (jobs, then, catch and finally
// callbacks, BatchOptions); Client.Batch, ListBatches, BatchEvents,
// BatchJobCounts, CancelBatch and PruneBatches read and operate on them.
// Client.Chain returns a ChainBuilder: jobs that run one after another,
// with a ChainCatchFunc for the first failure.
//
// Package worker runs the handlers and package deadline the sweeps; the
// storage seam a store implements is package store/driver.
package queuety
