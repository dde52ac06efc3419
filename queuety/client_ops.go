package queuety

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// QueueStates lists paused queues.
func (c *Client) QueueStates(ctx context.Context) ([]queuetytype.QueueState, error) {
	var out []queuetytype.QueueState
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.QueueStates(ctx); return err })
	return out, wrap("queue states", err)
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id int64) (*queuetytype.Job, error) {
	var j *queuetytype.Job
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { j, err = tx.JobGet(ctx, id, driver.LockNone); return err })
	return j, wrap("read job", err)
}

// ListJobs lists jobs, oldest first.
func (c *Client) ListJobs(ctx context.Context, f queuetytype.JobFilter) ([]*queuetytype.Job, error) {
	var out []*queuetytype.Job
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.JobList(ctx, f); return err })
	return out, wrap("list jobs", err)
}

// Counts returns the number of jobs per queue and status.
func (c *Client) Counts(ctx context.Context) ([]queuetytype.QueueCount, error) {
	var out []queuetytype.QueueCount
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.JobCounts(ctx); return err })
	return out, wrap("count jobs", err)
}

// OldestDueAge returns how long the longest-waiting due job of queue has
// been due (pending, available_at in the past), on the client's clock,
// or 0 when no job of queue is due. It reads one index entry, so it is
// cheap enough for every metrics scrape. Stored due times have whole-second
// precision.
func (c *Client) OldestDueAge(ctx context.Context, queue string) (time.Duration, error) {
	now := c.engine.Clock().Now()
	var due time.Time
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { due, err = tx.JobOldestDue(ctx, queue, now); return err })
	if err != nil || due.IsZero() {
		return 0, wrap("oldest due job", err)
	}
	return max(now.Sub(due), 0), nil
}

// WorkflowCounts returns the number of workflows in each status.
func (c *Client) WorkflowCounts(ctx context.Context) (map[queuetytype.WorkflowStatus]int64, error) {
	var out map[queuetytype.WorkflowStatus]int64
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WorkflowCounts(ctx); return err })
	return out, wrap("count workflows", err)
}

// Logs lists log rows, oldest first.
func (c *Client) Logs(ctx context.Context, f queuetytype.LogFilter) ([]*queuetytype.LogEntry, error) {
	var out []*queuetytype.LogEntry
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.LogList(ctx, f); return err })
	return out, wrap("list logs", err)
}

// Workflow reads one workflow row.
func (c *Client) Workflow(ctx context.Context, id int64) (*queuetytype.Workflow, error) {
	var wf *queuetytype.Workflow
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { wf, err = tx.WorkflowGet(ctx, id, driver.LockNone); return err })
	return wf, wrap("read workflow", err)
}

// ListWorkflows lists workflows, newest first.
func (c *Client) ListWorkflows(ctx context.Context, f queuetytype.WorkflowFilter) ([]*queuetytype.Workflow, error) {
	var out []*queuetytype.Workflow
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WorkflowList(ctx, f); return err })
	return out, wrap("list workflows", err)
}

// State returns a workflow's public state.
func (c *Client) State(ctx context.Context, id int64) (State, error) {
	wf, err := c.Workflow(ctx, id)
	if err != nil {
		return nil, err
	}
	doc, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return nil, err
	}
	return State(workflowstate.PublicMap(doc)), nil
}

// wrap adds the package prefix and what was being done to err; nil stays
// nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queuety: %s: %w", what, err)
}

// FailurePage lists the newest failures q selects (of a workflow, or of
// some jobs), oldest first, with their messages cut as q says: a bounded
// Failures.
func (c *Client) FailurePage(ctx context.Context, q queuetytype.FailureQuery) ([]*queuetytype.Failure, error) {
	var out []*queuetytype.Failure
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.FailurePage(ctx, q); return err })
	return out, wrap("list failures", err)
}

// Failures lists the recorded failures of a workflow, or of a job when
// workflowID is 0, oldest first; FailurePage lists a bounded page.
func (c *Client) Failures(ctx context.Context, workflowID, jobID int64) ([]*queuetytype.Failure, error) {
	var out []*queuetytype.Failure
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.FailureList(ctx, workflowID, jobID); return err })
	return out, wrap("list failures", err)
}
