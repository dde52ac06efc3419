package deadline

import (
	"context"
	"log/slog"

	"github.com/queuety/queuety-go/internal/sweep"
)

// BatchCallbacks enqueues the Go batch callbacks of batches whose last
// transition (first failure, end, cancel) Queuety PHP's workers made: PHP
// calls only PHP callback classes, so a Go callback registered on this
// process's workers would not run otherwise. Each is enqueued once however
// many Go workers sweep. Batches finished by Go workers never need it:
// their callbacks are enqueued in the transaction that finishes them. It
// returns how many callbacks it enqueued.
func (s *Sweeper) BatchCallbacks(ctx context.Context) (int, error) {
	return s.sweep(ctx, s.batchOf(sweep.ForeignBatches), slog.LevelInfo,
		"queuety: batch callbacks enqueued for batches another engine advanced")
}
