// Package dispatch writes what an application dispatches: one job, many
// jobs, a batch, a chain or a workflow, each in one transaction (or in a
// transaction the caller owns: DispatchIn, DispatchManyIn,
// DispatchWorkflowIn), in Queuety's row format.
//
// Its rules: a job request is validated and turned into a row (BuildJob:
// the handler name, the queue, priority, attempts, backoff, activity
// timeouts and resources, the reserved payload keys, the runtime key a
// payload carries, the deadlines that start at scheduling); a Unique job
// is written only when no twin is pending or processing, whatever the
// order of its payload's keys (unique.go); a workflow Definition is read
// and written in Queuety's runtime definition shape (definition.go), its
// initial state gets Queuety's private keys in Queuety's order (Prepare),
// and its row, idempotency key, first step and workflow_started log are
// written together (InsertWorkflow); an idempotency key used before
// returns the existing workflow.
//
// A Service is built by New from a driver.Store and a Config: a clock,
// the observer that hears dispatches, the wake that tells idle claim
// loops about new jobs, the engine transition that enqueues a workflow's
// first step, and the batch service that writes a batch's or chain's
// rows. It holds no *engine.Engine; the engine builds one in its
// constructor and serves it through Engine.Dispatcher, which
// queuety.Client calls. The advancement (children, start_workflows,
// continue-as-new) and the schedule tick start workflows in their own
// transactions through Prepare and InsertWorkflow.
package dispatch
