package ui

import (
	"context"
	"errors"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// operations are the job actions that depend on what the client offers.
// A nil function hides its button and answers its route with 404.
type operations struct {
	// bury buries a job by hand with a message.
	bury func(ctx context.Context, id int64, msg string) error
	// del deletes a job row.
	del func(ctx context.Context, id int64) error
	// retryBuried retries the buried plain jobs of a queue and handler
	// (empty: any) and returns how many it retried.
	retryBuried func(ctx context.Context, queue, handler string) (int64, error)
}

// The client methods the UI uses when the client has them.
type (
	jobBurier interface {
		BuryJob(context.Context, int64, string) error
	}
	jobDeleter interface {
		DeleteJob(context.Context, int64) error
	}
)

// clientOperations picks the client's own methods where it has them.
func clientOperations(c *queuety.Client) operations {
	ops := operations{retryBuried: func(ctx context.Context, queue, handler string) (int64, error) {
		return retryBuried(ctx, c, queue, handler)
	}}
	if b, ok := any(c).(jobBurier); ok {
		ops.bury = b.BuryJob
	}
	if d, ok := any(c).(jobDeleter); ok {
		ops.del = d.DeleteJob
	}
	return ops
}

// retryBuriedBatch is how many buried jobs retryBuried reads at a time.
const retryBuriedBatch = 100

// retryBuried retries every buried plain job of queue and handler (empty:
// any) with RetryJob, one job per transaction, and returns how many it
// retried. Buried workflow steps are left alone: RetryWorkflow restarts
// their workflow. A job another operator retried meanwhile is skipped.
//
// It stands in for a bulk retry method of the client; when the client has
// one, clientOperations should use it instead.
func retryBuried(ctx context.Context, c *queuety.Client, queue, handler string) (int64, error) {
	var n, after int64
	for {
		jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: queue, Handler: handler, Status: queuety.JobBuried,
			AfterID: after, Limit: retryBuriedBatch})
		if err != nil {
			return n, err
		}
		for _, j := range jobs {
			after = j.ID
			if j.WorkflowID != 0 {
				continue
			}
			switch err := c.RetryJob(ctx, j.ID); {
			case err == nil:
				n++
			case errors.Is(err, queuety.ErrInvalidState), errors.Is(err, queuety.ErrNotFound):
			default:
				return n, err
			}
		}
		if len(jobs) < retryBuriedBatch {
			return n, nil
		}
	}
}
