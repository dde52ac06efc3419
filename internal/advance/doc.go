// Package advance holds workflow advancement, written once: a step's
// completion and the next step's jobs (steps.go, stepjobs.go), parallel
// joins, for-each (foreach.go), repeat, signal waits (waits.go) and
// workflow waits (waitworkflows.go), children (children.go),
// continue-as-new, budgets, failure and expiry with their callbacks
// (failure.go, handoff.go, overrun.go), compensation (compensation.go),
// and the hand-off of compensations and cancel callbacks to Queuety PHP
// (phpbridge.go, foreignends.go). Step is what a claimed workflow step
// carries beside its job (the workflow row, its decoded state, its step
// definitions and the step it runs), so the engine's job core and the
// advancement rules share one description of a running step.
//
// A Service is built by the engine (package internal/engine) in its New,
// as operate's Service is, on a Core: the small set of job-level
// transitions and rules the advancement needs from the engine's job core
// (burying a job, locking a workflow, inserting a child workflow, the
// deadline and schedule rules, which workers this process has). The
// engine keeps the entry points: it claims jobs, locks a step's workflow
// and job in the transaction that records an attempt (checking the
// attempt's fence and the workflow's deadline), and calls Complete,
// FailedEvents or the failure transitions; its sweeps and operator
// actions call the transitions here (SettleWait, ExpireLocked,
// FailWorkflowLocked, StartCompensation, AfterTerminal, ...) inside their
// own transactions. An Attempt is the engine's view of the attempt a
// transition records (its times, its trace, its user functions).
//
// The rules never start a transaction of their own except where they are
// the whole operation (Signal, Answer, ExpireWorkflow, FailOverrun,
// FailWorkflow, CompleteBranchGroups). What a workflow state means (the
// merge, budgets, for-each runtime, waits) is package
// internal/workflowstate's; the step definition format is
// internal/workflowdef's.
package advance
