package queuety

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Workers lists the worker registry, oldest start first: every worker
// (package worker) running Run or RunOnce on this store, with its host,
// process, version, queues, handlers, concurrency and the jobs it runs,
// and the workers that stopped renewing within the last
// queuetytype.WorkerRetention, marked Gone once they missed
// queuetytype.GoneAfter renewals (by this client's clock).
func (c *Client) Workers(ctx context.Context) ([]*queuetytype.Worker, error) {
	var out []*queuetytype.Worker
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WorkerList(ctx); return err })
	if err != nil {
		return nil, wrap("list workers", err)
	}
	now := c.engine.Clock().Now()
	for _, w := range out {
		w.Gone = now.Sub(w.LastHeartbeat) > time.Duration(queuetytype.GoneAfter)*w.HeartbeatInterval
	}
	return out, nil
}
