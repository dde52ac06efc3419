package driver

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// WorkerTx holds the operations on the Go engine's worker registry table
// ({prefix}queuety_go_workers), one row per running worker process.
type WorkerTx interface {
	// WorkerSave inserts the worker's row, or updates every column but
	// started_at of the row with its id. Gone is not stored.
	WorkerSave(ctx context.Context, w *queuetytype.Worker) error
	// WorkerDelete removes the worker's row and reports whether it
	// existed.
	WorkerDelete(ctx context.Context, id string) (bool, error)
	// WorkerList lists the registry by start time, then id, with Gone
	// false (the caller decides it).
	WorkerList(ctx context.Context) ([]*queuetytype.Worker, error)
	// WorkerPrune removes up to limit rows last renewed before before and
	// returns how many it removed. It locks only the rows it removes.
	WorkerPrune(ctx context.Context, before time.Time, limit int) (int64, error)
}
