// Package engine holds the engine's job core, written once: claiming jobs,
// recording results with attempt fencing, retries and backoff, leases and
// heartbeats, activity and workflow timeouts, dispatch, unique jobs, locks
// and wakes. Every transition is one driver.Store transaction.
//
// An Engine is built by New from a store, a clock, a logger and Config; it
// never reaches back to the queuety.Client that owns it. Package queuety
// translates its user types into the engine's; package worker drives
// claims and results, and package deadline drives the sweeps.
//
// The sweeps are split by role: which rows are due, in what batches, and
// how often, is internal/sweep's (the finders) and package deadline's (the
// loops); what happens to a due row is the engine's, in the sweep's
// transaction, through the transitions in sweepsteps.go (expiry, wait
// timeouts, stale recovery, schedule ticks) and batchsweep.go, which call
// workflow advancement's. So every state change has one home, and the
// sweeps can change how they look for rows without touching a rule.
//
// The engine's own layer is the job-level core: claiming (with its side
// of package internal/admission, which holds rate limits, concurrency
// groups and cost budgets), recording results with fencing, retries,
// leases and heartbeats, activity timeouts and wakes.
//
// Workflow advancement lives in package internal/advance: a step's
// completion and the next step's jobs, parallel joins, for-each, repeat,
// signal and workflow waits, children, continue-as-new, budgets, failure
// and expiry with their callbacks, compensation, the deadline handoff,
// overrun workflows and the workflows ended by Queuety PHP. advancing.go
// builds its Service in New on advance.Core, the small interface over the
// job core it calls (burying a job, locking a workflow, inserting a child
// workflow, the deadline and schedule rules, which workers this process
// has), which advanceCore implements, and keeps the engine's exported names for what moved there. The
// engine keeps the entry points: the claim attaches a step's workflow
// (advance.Step, Claimed's flow field), and steps.go locks a step's
// workflow and job in the transaction that records an attempt, checks its
// fence and the workflow's deadline, and hands the step to advance
// (Complete, FailedEvents, CompleteBranchGroups); complete.go's batch of
// single steps calls FinalizeInto. A job's policy as its payload carries
// it (__queuety_runtime: attempts, backoff, timeouts, rate limit) and the
// backoff policies are package internal/jobruntime's; the engine reads and
// writes them with it.
//
// The time rules of the stored rows (second-precision DATETIME values, a
// job's due time, the ISO form events carry) are package
// internal/rowtime's, shared with internal/operate.
//
// The workflow state format lives in package internal/workflowstate: the
// JSON as PHP writes it, the private keys and the fields a workflow's jobs
// inherit, the merge of a step's output, budgets and their counters, a
// for-each step's runtime and aggregate, a repeat's iterations, and what a
// wait settles with. Those rules touch no row; the engine applies them
// inside its transactions (internal/advance's steps.go, foreach.go,
// repeat.go, waits.go, waitworkflows.go, budget.go), so a state change is
// written there, and what a state means is written once, in
// workflowstate.
//
// Batches and chains (their rows, transitions, callback jobs and the
// chain catch) live in package internal/batch; batches.go builds its
// Service in New, turns batch and chain requests into rows, and calls its
// transitions from the transactions that complete and bury jobs.
//
// Schedules (saving, operating, the tick's catch-up and overlap rules)
// live in package internal/schedule; the engine builds its Service in New
// with the transition a firing needs (schedules.go), and TickLocked hands
// each due row the schedule sweep found to it.
//
// The operator actions (pausing, resuming, cancelling, retrying,
// rewinding, forking and replaying workflows; retrying, burying, deleting
// and purging jobs; pausing queues; purging logs; handler metrics) live in
// package internal/operate. operations.go builds its Service in New with
// the transitions they run inside their transactions (the job core's
// buryJob, lockWorkflow and retryJobRow, and advancement's EnqueueStep,
// BuryOpenJobs, StartCompensation, AfterTerminal, StepJobBuried and
// EnqueueCallback) and serves it through Engine.Operations.
//
// Dispatching (one job, many, a batch, a chain or a workflow, each in one
// transaction or in one the caller owns; unique jobs and their twin
// search; idempotency keys; the workflow Definition and the private state
// keys a new workflow gets) lives in package internal/dispatch.
// dispatch.go builds its Service in New with the transition that enqueues
// a workflow's first step and serves it through Engine.Dispatcher; the
// advancement's core (children, start_workflows, continue-as-new) and the
// schedule tick call dispatch.Prepare and Service.InsertWorkflow to start
// workflows inside their own transactions.
//
// Artifacts (their rows, put, get, list, delete) live in package
// internal/artifact; artifacttrace.go builds its Service in New with the
// hook that records an artifact stored from a step handler on the running
// attempt, for its step_completed event, and keeps PutCurrentArtifact.
//
// A step attempt's trace (the trace input, output and context a handler
// sets, the reserved _queuety_trace output key, the artifacts it stored)
// and a streaming step's chunks live in package internal/steptrace: each
// Claimed holds a steptrace.Trace, and runtimetrace.go keeps the ctx entry
// points (SetTraceInput, StreamChunk, ...) and the Claimed methods the
// event writers call (traceCompleted, traceFailed, tracedArtifacts, ...).
//
// The middleware's named locks and exception counters (Queuety's locks
// table) live in package internal/locks, served through Engine.Locks.
//
// The read views (describing a workflow, exporting and tracing its
// history, the state after a step) live in package internal/readview,
// which reads the store on its own and imports no engine: what a stored
// state means to a view it reads with the format packages the engine
// writes with (internal/workflowstate, internal/workflowdef,
// internal/jobruntime).
package engine
