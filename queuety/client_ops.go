package queuety

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// PauseQueue stops workers from claiming jobs of a queue (Queuety's
// queue_states row). Jobs already running finish.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	if queue == "" {
		return invalidf("queue name is empty")
	}
	err := c.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, true, c.clock.Now()) })
	return wrap(fmt.Sprintf("pause queue %q", queue), err)
}

// ResumeQueue lets workers claim a paused queue's jobs again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	err := c.store.InTx(ctx, func(tx driver.Tx) error { return tx.QueueSetPaused(ctx, queue, false, c.clock.Now()) })
	return wrap(fmt.Sprintf("resume queue %q", queue), err)
}

// QueueStates lists paused queues.
func (c *Client) QueueStates(ctx context.Context) ([]driver.QueueState, error) {
	var out []driver.QueueState
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.QueueStates(ctx); return err })
	return out, wrap("queue states", err)
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id int64) (*driver.Job, error) {
	var j *driver.Job
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { j, err = tx.JobGet(ctx, id, driver.LockNone); return err })
	return j, wrap("read job", err)
}

// ListJobs lists jobs, oldest first.
func (c *Client) ListJobs(ctx context.Context, f driver.JobFilter) ([]*driver.Job, error) {
	var out []*driver.Job
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.JobList(ctx, f); return err })
	return out, wrap("list jobs", err)
}

// Counts returns the number of jobs per queue and status.
func (c *Client) Counts(ctx context.Context) ([]driver.QueueCount, error) {
	var out []driver.QueueCount
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.JobCounts(ctx); return err })
	return out, wrap("count jobs", err)
}

// WorkflowCounts returns the number of workflows in each status.
func (c *Client) WorkflowCounts(ctx context.Context) (map[WorkflowStatus]int64, error) {
	var out map[WorkflowStatus]int64
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WorkflowCounts(ctx); return err })
	return out, wrap("count workflows", err)
}

// Logs lists log rows, oldest first.
func (c *Client) Logs(ctx context.Context, f driver.LogFilter) ([]*driver.LogEntry, error) {
	var out []*driver.LogEntry
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.LogList(ctx, f); return err })
	return out, wrap("list logs", err)
}

// RetryJob puts a buried (or failed) job back in its queue, due now, with a
// fresh attempt count. It returns ErrInvalidState for a job in any other
// status. For a workflow step, use RetryWorkflow instead.
func (c *Client) RetryJob(ctx context.Context, id int64) error {
	err := c.store.InTx(ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if j.Status != JobBuried && j.Status != JobFailed {
			return fmt.Errorf("%w: job is %s; only buried or failed jobs can be retried", ErrInvalidState, j.Status)
		}
		if j.WorkflowID != 0 {
			return fmt.Errorf("%w: job %d is a step of workflow %d; retry the workflow", ErrInvalidState, id, j.WorkflowID)
		}
		now := c.clock.Now()
		j.Status = JobPending
		j.Attempts = 0
		j.AvailableAt = floorSecond(now)
		j.ReservedAt, j.FailedAt = time.Time{}, time.Time{}
		j.ErrorMessage = ""
		j.ClaimToken = 0
		if doc, err := decodeObject("payload", j.Payload); err == nil {
			applyScheduleDeadlines(j, parseRuntime(doc).Timeouts, now)
		}
		if err := tx.JobUpdate(ctx, j); err != nil {
			return err
		}
		return tx.LogInsert(ctx, []*driver.LogEntry{{JobID: ptr(j.ID), Handler: j.Handler, Queue: j.Queue, Event: driver.LogRetried, CreatedAt: now,
			Context: encodeJSON(map[string]any{"type": "manual_retry", "attempts_reset": true})}})
	})
	return wrap(fmt.Sprintf("retry job %d", id), err)
}

// PurgeCompleted deletes completed jobs that completed more than olderThan
// ago, in batches, and returns how many it deleted.
func (c *Client) PurgeCompleted(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("purge age must not be negative")
	}
	before := c.clock.Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { n, err = tx.JobDeleteFinished(ctx, before, 1000); return err })
		if err != nil {
			return total, wrap("purge completed jobs", err)
		}
		total += n
		if n < 1000 {
			return total, nil
		}
	}
}

// Workflow reads one workflow row.
func (c *Client) Workflow(ctx context.Context, id int64) (*driver.Workflow, error) {
	var wf *driver.Workflow
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { wf, err = tx.WorkflowGet(ctx, id, driver.LockNone); return err })
	return wf, wrap("read workflow", err)
}

// ListWorkflows lists workflows, newest first.
func (c *Client) ListWorkflows(ctx context.Context, f driver.WorkflowFilter) ([]*driver.Workflow, error) {
	var out []*driver.Workflow
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WorkflowList(ctx, f); return err })
	return out, wrap("list workflows", err)
}

// State returns a workflow's public state.
func (c *Client) State(ctx context.Context, id int64) (State, error) {
	wf, err := c.Workflow(ctx, id)
	if err != nil {
		return nil, err
	}
	doc, err := decodeObject("workflow state", wf.State)
	if err != nil {
		return nil, err
	}
	return toState(publicState(doc)), nil
}

// wrap adds the package prefix and what was being done to err; nil stays
// nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queuety: %s: %w", what, err)
}

// Failures lists the recorded failures of a workflow, or of a job when
// workflowID is 0, oldest first.
func (c *Client) Failures(ctx context.Context, workflowID, jobID int64) ([]*driver.Failure, error) {
	var out []*driver.Failure
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.FailureList(ctx, workflowID, jobID); return err })
	return out, wrap("list failures", err)
}
