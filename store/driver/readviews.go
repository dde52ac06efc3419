package driver

import (
	"context"
	"time"
)

// ReadViewTx holds the bounded reads of the operator views: reads whose
// cost does not grow with the size of a payload or the number of queues.
type ReadViewTx interface {
	// JobOldestDueByQueue returns, for every queue with a due pending job
	// at now, the earliest available_at of its due pending jobs, in one
	// grouped read of the (queue, status, available_at) index: one entry
	// per queue, no payload.
	JobOldestDueByQueue(ctx context.Context, now time.Time) (map[string]time.Time, error)
	// JobPreview reads one job like JobGet (without a lock), with its
	// payload and heartbeat data cut to their first maxChars characters.
	JobPreview(ctx context.Context, id int64, maxChars int) (*JobPreview, error)
	// TextRead reads up to n characters of a large column of the row id,
	// starting at character from (0-based), and the value's full length in
	// characters (-1 when it is NULL). Reading a value piece by piece keeps
	// only one piece in memory. ErrNotFound when there is no such row.
	TextRead(ctx context.Context, col TextColumn, id, from, n int64) ([]byte, int64, error)
}
