package ui

import (
	"context"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// operations are the job actions the UI offers. A nil function hides its
// button and answers its route with 404 (tests turn actions off this way).
type operations struct {
	// bury buries a job by hand with a message.
	bury func(ctx context.Context, id int64, msg string) error
	// del deletes a job row.
	del func(ctx context.Context, id int64) error
	// retryBuried retries the buried plain jobs of a queue and handler
	// (empty: any) and returns how many it retried.
	retryBuried func(ctx context.Context, queue, handler string) (int64, error)
}

// clientOperations returns the client's own job operations.
func clientOperations(c *queuety.Client) operations {
	return operations{
		bury: c.BuryJob,
		del:  c.DeleteJob,
		retryBuried: func(ctx context.Context, queue, handler string) (int64, error) {
			return c.RetryBuried(ctx, queuetytype.BuriedFilter{Queue: queue, Handler: handler})
		},
	}
}
