package worker

import (
	"time"

	"github.com/go-co-op/gocron/v2"
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
