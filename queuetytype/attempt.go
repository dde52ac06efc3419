package queuetytype

import (
	"encoding/json"
	"time"
)

// JobInfo describes the attempt a handler is running. A handler gets it
// with queuety.JobInfoFrom(ctx).
type JobInfo struct {
	// JobID is the execution id: the job row's id, stable across retries.
	// Use it as an idempotency key for side effects.
	JobID int64
	// AttemptID identifies this attempt alone ("<job>-<attempt>-<claim>").
	AttemptID string
	// Attempt counts from 1.
	Attempt int
	// MaxAttempts is the effective attempt limit.
	MaxAttempts int
	// Queue is the queue the job was claimed from.
	Queue string
	// Handler is the handler name the job runs.
	Handler string
	// WorkflowID is the workflow of a step job (0 for a plain job).
	WorkflowID int64
	// StepIndex is the step of a step job (-1 for a plain job).
	StepIndex int
	// StepName is the step's name in the workflow definition.
	StepName string
	// Deadline is the attempt's start-to-close deadline (zero when none).
	// The handler's ctx expires then too.
	Deadline time.Time
	// WorkflowDeadline is the earlier of the workflow's execution and run
	// deadlines (zero when none). The ctx is cancelled with
	// ErrDeadlineExceeded when it passes.
	WorkflowDeadline time.Time
	// Heartbeat is the heartbeat timeout (zero when none).
	Heartbeat time.Duration
	// LastDetails holds the details of the job's last recorded heartbeat,
	// from this attempt or an earlier one (nil when none).
	LastDetails json.RawMessage
}
