package worker

// The worker registry: while Run or RunOnce runs, the worker keeps a row
// in the Go engine's workers table saying who it is, what it polls and
// which jobs it runs, renewed by the lease keeper at every lease interval
// (never in the claim path), and removes it when it stops.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// registryPruneLimit bounds the gone workers' rows one renewal removes.
const registryPruneLimit = 100

// registryPruneEvery is how often one worker removes gone workers' rows:
// its renewals in between only save its own row.
const registryPruneEvery = time.Minute

// newRegistryID names a worker process: host, process id and a random
// suffix, so two workers of one process have different ids.
func newRegistryID(host string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	if len(host) > 120 {
		host = host[:120]
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// hostname is the machine's name, or "unknown".
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// heartbeatInterval is how often the worker renews its registry row: its
// lease interval.
func (w *Worker) heartbeatInterval() time.Duration {
	if w.cfg.leaseInterval > 0 {
		return w.cfg.leaseInterval
	}
	return LeaseIntervalDefault
}

// idleHeartbeatInterval is how often an idle worker (no job running)
// renews its registry row: IdleHeartbeatInterval, at least the lease
// interval.
func (w *Worker) idleHeartbeatInterval() time.Duration {
	return max(IdleHeartbeatInterval, w.heartbeatInterval())
}

// IdleHeartbeatInterval is how often a worker that runs no job renews its
// row in the worker registry (a running one renews it at every lease
// interval), so an idle worker killed shows as gone after GoneAfter of
// them.
const IdleHeartbeatInterval = 15 * time.Second

// register registers the worker and returns beat, which renews its row
// (the lease keeper calls it after each renewal of its claims), and
// deregister, which removes the row once beat is no longer called.
// Registry errors are logged, never fatal: a worker on a store migrated
// before the registry existed runs all the same.
func (w *Worker) register(ctx context.Context) (beat func(context.Context), deregister func()) {
	store := w.engine.Store()
	clock := w.engine.Clock()
	handlers := w.reg.Names()
	slices.Sort(handlers)
	row := queuetytype.Worker{
		ID: w.registryID, Host: w.host, PID: os.Getpid(), Version: queuety.Version(),
		Queues: slices.Clone(w.cfg.queues), Handlers: handlers, Concurrency: w.cfg.concurrency,
		HeartbeatInterval: w.heartbeatInterval(), StartedAt: clock.Now().UTC(),
	}
	failing := false
	var pruned time.Time  // when this worker last removed gone workers
	var written time.Time // when the row was last written
	wroteIdle := false    // the last write was an idle one
	oneStatement, _ := store.(driver.IdleReader)
	beat = func(ctx context.Context) {
		// A slow database must not hold up the next renewal of the
		// claims for longer than an interval.
		ctx, cancel := context.WithTimeout(ctx, w.heartbeatInterval())
		defer cancel()
		jobs := w.inflightIDs()
		now := clock.Now().UTC()
		// An idle worker renews its row every idle heartbeat interval,
		// and says so in the row, so the registry's gone detection waits
		// for GoneAfter of those; the first write after it went idle or
		// busy tells the new interval at once.
		idle := len(jobs) == 0 && w.recordingCount() == 0
		interval := w.heartbeatInterval()
		if idle {
			interval = w.idleHeartbeatInterval()
		}
		if idle && wroteIdle && now.Sub(written) < interval-w.heartbeatInterval()/2 {
			return
		}
		row.Jobs, row.LastHeartbeat, row.HeartbeatInterval = jobs, now, interval
		prune := row.LastHeartbeat.Sub(pruned) >= registryPruneEvery
		if prune && w.pruneNeedless(row.LastHeartbeat, queuetytype.WorkerRetention) {
			prune, pruned = false, row.LastHeartbeat // the sweep gate's read found none to remove
		}
		var err error
		if !prune && oneStatement != nil {
			err = oneStatement.WorkerSaveOne(ctx, &row)
		} else {
			err = store.InTx(ctx, func(tx driver.Tx) error {
				if err := tx.WorkerSave(ctx, &row); err != nil {
					return err
				}
				// Whoever renews removes the workers gone for longer than
				// the retention, a few at a time, once a registryPruneEvery.
				if !prune {
					return nil
				}
				_, err := tx.WorkerPrune(ctx, row.LastHeartbeat.Add(-queuetytype.WorkerRetention), registryPruneLimit)
				return err
			})
		}
		if err == nil {
			written, wroteIdle = now, idle
			if prune {
				pruned = row.LastHeartbeat
			}
		}
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			w.log.Warn("queuety: cannot write this worker's row in the worker registry (run migrate?)", "worker_id", row.ID, "err", err)
			failing = true
		case err == nil:
			failing = false
		}
		if h := w.cfg.test.heartbeat; h != nil {
			h(err)
		}
	}
	beat(ctx)
	return beat, func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := store.InTx(dctx, func(tx driver.Tx) error { _, err := tx.WorkerDelete(dctx, row.ID); return err })
		if err != nil {
			w.log.Warn("queuety: cannot remove this worker's row from the worker registry; it shows as gone until it expires",
				"worker_id", row.ID, "err", err)
		}
	}
}
