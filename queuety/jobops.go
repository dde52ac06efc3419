package queuety

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/queuetytype"
)

// BuryJob buries a job by hand, as Queuety's bury_job does: status buried,
// failed_at now and msg (ManualBuryMessage when empty) as its error
// message, and no log row. It returns ErrNotFound for an unknown job and
// ErrInvalidState for a completed or already buried one. A step of a
// running workflow is handled as a step whose attempts ran out, in the
// same transaction: the workflow fails (RetryWorkflow restarts it), or a
// for_each branch counts as failed. Queuety PHP buries only the job row.
func (c *Client) BuryJob(ctx context.Context, id int64, msg string) error {
	return c.engine.Operations().BuryJob(ctx, id, msg)
}

// DeleteJob deletes a job row, as Queuety's delete_job does; its log rows
// are kept. It returns ErrNotFound for an unknown job and ErrInvalidState
// for a pending or processing step of a workflow that has not ended
// (cancel or rewind the workflow instead).
func (c *Client) DeleteJob(ctx context.Context, id int64) error {
	return c.engine.Operations().DeleteJob(ctx, id)
}

// RetryBuried retries every buried plain job that matches f, each as
// RetryJob retries one (due now, fresh attempts, a `retried` log row), and
// returns how many it retried. Buried workflow steps are left for
// RetryWorkflow. It works in batches of 100, each in its own transaction.
//
// Queuety PHP's retry_buried sets the same status, reserved_at,
// available_at and error_message, but keeps the attempt count (so a job
// retried after running out of attempts is buried again at its next
// failure), writes no log row, and also requeues buried workflow steps,
// which then wait for good when their workflow has failed.
func (c *Client) RetryBuried(ctx context.Context, f queuetytype.BuriedFilter) (int64, error) {
	return c.engine.Operations().RetryBuried(ctx, f)
}

// RecoverStale takes back every job whose claim went stale (Queuety's
// recover_stale_jobs): a processing job whose claim was not renewed within
// the stale timeout (WithStaleTimeout; a Go worker's claim within the
// lease timeout) is retried with backoff while attempts remain and a
// `retried` row is logged; otherwise it is buried with StaleMessage, a
// `buried` row is logged and its workflow fails. It is the sweep workers
// run periodically, safe to run alongside them, and returns how many jobs
// it recovered.
func (c *Client) RecoverStale(ctx context.Context) (int, error) {
	total := 0
	for {
		n, more, err := sweep.RecoverStale(ctx, c.engine, 100)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// HandlerMetrics computes per-handler metrics from the log rows of the
// last window (Queuety's handler_metrics with window in minutes), in
// handler name order. window must be positive.
func (c *Client) HandlerMetrics(ctx context.Context, window time.Duration) ([]queuetytype.HandlerMetric, error) {
	return c.engine.Operations().HandlerMetrics(ctx, window)
}

// PurgeLogs deletes log rows created more than olderThan ago (Queuety's
// purge_logs), in batches, and returns how many it deleted.
func (c *Client) PurgeLogs(ctx context.Context, olderThan time.Duration) (int64, error) {
	return c.engine.Operations().PurgeLogs(ctx, olderThan)
}

// PruneWorkflowEvents deletes workflow events created more than olderThan
// ago (Queuety's WorkflowEventLog::prune), in batches of 1000, and returns
// how many it deleted. Rewinding a workflow to a step whose events are
// gone fails; the workflows themselves are untouched.
func (c *Client) PruneWorkflowEvents(ctx context.Context, olderThan time.Duration) (int64, error) {
	return c.engine.Operations().PruneWorkflowEvents(ctx, olderThan)
}

// PurgeWorkflows deletes the workflows that finished (completed, failed
// or cancelled) more than olderThan ago, with their jobs, events,
// streaming chunks, artifacts, signals, the dependencies they waited on
// and their dispatch keys (a later dispatch with the same key starts a new
// workflow); log rows stay for PurgeLogs. It deletes 100 workflows a
// transaction, oldest first, and returns how many it deleted.
func (c *Client) PurgeWorkflows(ctx context.Context, olderThan time.Duration) (int64, error) {
	return c.engine.Operations().PurgeWorkflows(ctx, olderThan)
}

// RemoveScheduleByHandler deletes the schedule of a handler (Queuety's
// remove_schedule) and returns its id; jobs it dispatched are kept. A
// workflow schedule's handler is "__queuety_workflow:<key>". It returns
// ErrNotFound when the handler has no schedule.
func (c *Client) RemoveScheduleByHandler(ctx context.Context, handler string) (int64, error) {
	return c.engine.Schedules().RemoveByHandler(ctx, handler)
}
