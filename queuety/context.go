package queuety

import (
	"context"
	"encoding/json"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
)

// JobInfo describes the attempt a handler is running. Get it with
// JobInfoFrom(ctx).
type JobInfo struct {
	// JobID is the execution id: the job row's id, stable across retries.
	// Use it as an idempotency key for side effects.
	JobID int64
	// AttemptID identifies this attempt alone ("<job>-<attempt>-<claim>").
	AttemptID string
	// Attempt counts from 1. MaxAttempts is the effective limit.
	Attempt     int
	MaxAttempts int
	Queue       string
	Handler     string
	// WorkflowID and StepIndex are set for workflow steps (StepIndex is -1
	// otherwise). StepName is the step's name in the definition.
	WorkflowID int64
	StepIndex  int
	StepName   string
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

// JobInfoFrom returns the JobInfo of the attempt running in ctx.
func JobInfoFrom(ctx context.Context) (JobInfo, bool) {
	a, ok := engine.AttemptFrom(ctx)
	return JobInfo(a), ok
}

// LastHeartbeat returns the details of the job's last heartbeat, recorded
// by this attempt or an earlier one, as JSON text; nil when there is none.
// A retry uses it to resume where the previous attempt stopped.
func LastHeartbeat(ctx context.Context) json.RawMessage { return engine.LastHeartbeat(ctx) }

// ErrNoAttempt is returned by Heartbeat outside a handler.
var ErrNoAttempt = engine.ErrNoAttempt

// Heartbeat reports that the running attempt is alive and, when details is
// not nil, stores details (anything that encodes as JSON) for a later
// attempt to read with LastHeartbeat. Calls are throttled on the client:
// the first is sent at once; calls within the throttle window (0.8 × the
// heartbeat timeout, or 30 s) only keep their details, which are sent when
// the window ends or the attempt finishes.
//
// It returns ErrStaleAttempt when the attempt no longer owns its job; the
// handler's ctx is then cancelled too.
func Heartbeat(ctx context.Context, details any) error { return engine.Heartbeat(ctx, details) }
