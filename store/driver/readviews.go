package driver

import (
	"context"
	"time"
)

// TextColumn names a column that can hold a large text value, which a
// reader takes in pieces (ReadViewTx.TextRead) instead of whole.
type TextColumn int

// The large text columns.
const (
	// JobPayload is the payload column of the jobs table.
	JobPayload TextColumn = iota + 1
	// JobHeartbeatData is the heartbeat_data column of the jobs table.
	JobHeartbeatData
	// WorkflowState is the state column of the workflows table.
	WorkflowState
)

// JobPreview is a job read with its large columns cut short: Payload and
// HeartbeatData hold at most the number of characters asked for, and
// PayloadLen and HeartbeatLen are their full lengths in characters
// (HeartbeatLen is 0 when the column is NULL).
type JobPreview struct {
	Job                      *Job
	PayloadLen, HeartbeatLen int64
}

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
