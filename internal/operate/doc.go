// Package operate holds the operator actions: pausing, resuming,
// cancelling, retrying, rewinding, forking and replaying a workflow
// (Queuety's rewind_workflow, fork_workflow and WorkflowReplayer), and
// retrying, burying, deleting and purging jobs, pausing queues, purging
// logs and the per-handler metrics.
//
// A Service is built by New from a driver.Store and a Config that holds
// the engine transitions the actions run inside their transactions:
// locking a workflow with its decoded state and steps, enqueueing a step,
// burying one job or a workflow's open jobs, starting a cancel's
// compensations, what follows a workflow's end, handing a buried step to
// its workflow, enqueueing a workflow callback, re-queueing a buried job,
// starting a run and clearing an attempt's deadlines. Each action decides
// whether it may run (returning queuetytype.ErrInvalidState when the row's
// status forbids it) and writes its own rows; what a transition does is
// written once, in the engine. The Service holds no *engine.Engine; the
// engine builds one in its constructor and serves it through
// Engine.Operations, which queuety.Client calls.
package operate
