package queuety

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/readview"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// views returns the read views (describe, export, trace, state at a step)
// of the client's store, on its clock.
func (c *Client) views() *readview.Views { return readview.New(c.store, c.engine.Clock()) }

// OldestDueAges returns, for every queue with a due pending job, how long
// its longest-waiting due job has been due, on the client's clock. It is
// one grouped read of the (queue, status, available_at) index, a few
// entries per queue and no payload, so an overview or a metrics scrape
// costs the same one statement however many queues there are. Queues with
// no due job are absent. Stored due times have whole-second precision.
func (c *Client) OldestDueAges(ctx context.Context) (map[string]time.Duration, error) {
	now := c.engine.Clock().Now()
	var due map[string]time.Time
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { due, err = tx.JobOldestDueByQueue(ctx, now); return err })
	if err != nil {
		return nil, wrap("oldest due job per queue", err)
	}
	out := make(map[string]time.Duration, len(due))
	for q, d := range due {
		out[q] = max(now.Sub(d), 0)
	}
	return out, nil
}

// JobPreview reads one job with its payload and heartbeat data cut to
// their first maxChars characters, and their full lengths: a page that
// shows a job reads a bounded amount whatever its payload's size.
func (c *Client) JobPreview(ctx context.Context, id int64, maxChars int) (*queuetytype.JobPreview, error) {
	var p *queuetytype.JobPreview
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { p, err = tx.JobPreview(ctx, id, maxChars); return err })
	return p, wrap("read job", err)
}

// ReadText reads up to n characters of a large column (a job's payload or
// heartbeat data, a workflow's state) of the row id, starting at
// character from, and the value's full length in characters (-1 for
// NULL). Read a large value in pieces to stream it without holding it
// whole in memory.
func (c *Client) ReadText(ctx context.Context, col queuetytype.TextColumn, id, from, n int64) ([]byte, int64, error) {
	var b []byte
	var total int64
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { b, total, err = tx.TextRead(ctx, col, id, from, n); return err })
	return b, total, wrap("read text", err)
}
