package worker

import (
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/queuety/queuety-go/internal/engine"
)

// OnMaintenanceStarted calls f with the maintenance scheduler once Run has
// started it.
func OnMaintenanceStarted(f func(gocron.Scheduler)) Option {
	return func(c *config) { c.test.started = f }
}

// OnTickArmed calls f each time the schedule tick arms its timer, with how
// long it sleeps on the worker's timer clock.
func OnTickArmed(f func(wait time.Duration)) Option {
	return func(c *config) { c.test.tickArmed = f }
}

// OnWebhooksRefreshed calls f after each read of the webhooks table, with
// the number of webhooks read.
func OnWebhooksRefreshed(f func(n int)) Option {
	return func(c *config) { c.test.webhooksRefreshed = f }
}

// OnRenewal calls before before each renewal of the lease keeper, with
// the number of running attempts it renews (the renewal waits for it), and
// after once the keeper has acted on the renewal's answer.
func OnRenewal(before, after func(running int)) Option {
	return func(c *config) { c.test.renewing, c.test.renewed = before, after }
}

// OnClaimBackoff calls f after each failed claim, with how long the worker
// waits before it claims again.
func OnClaimBackoff(f func(wait time.Duration)) Option {
	return func(c *config) { c.test.claimBackoff = f }
}

// OnScale calls armed each time the adaptive scaler arms its timer, and
// scaled after each resize decision.
func OnScale(armed func(), scaled func(from, to int)) Option {
	return func(c *config) { c.test.scaleArmed, c.test.scaled = armed, scaled }
}

// OnHeartbeat calls f after each write of the worker's row in the worker
// registry (registration and renewals), with its error.
func OnHeartbeat(f func(err error)) Option {
	return func(c *config) { c.test.heartbeat = f }
}

// RegistryID returns the id the worker registers under.
func RegistryID(w *Worker) string { return w.registryID }

// OnHeldSettle calls f in a held batch's settling once the batch is due
// (its handlers returned, or the bound passed), with its job ids, before
// it is written; f may block to stall it.
func OnHeldSettle(f func(ids []int64)) Option {
	return func(c *config) {
		c.test.heldSettle = func(jobs []*engine.Claimed) {
			ids := make([]int64, len(jobs))
			for i, cj := range jobs {
				ids[i] = cj.Job.ID
			}
			f(ids)
		}
	}
}

// HeldTogether makes the worker's first held claim wait until n held
// claims of its client's workers are queued for its turn, so that they
// share one transaction.
func HeldTogether(n int) Option {
	return func(c *config) {
		var first atomic.Bool
		c.test.heldTogether = func() int {
			if first.CompareAndSwap(false, true) {
				return n
			}
			return 0
		}
	}
}
