package queuety

import (
	"context"
	"encoding/json"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// JobInfoFrom returns the JobInfo of the attempt running in ctx.
func JobInfoFrom(ctx context.Context) (queuetytype.JobInfo, bool) {
	a, ok := engine.AttemptFrom(ctx)
	return queuetytype.JobInfo(a), ok
}

// LastHeartbeat returns the details of the job's last heartbeat, recorded
// by this attempt or an earlier one, as JSON text; nil when there is none.
// A retry uses it to resume where the previous attempt stopped.
func LastHeartbeat(ctx context.Context) json.RawMessage { return engine.LastHeartbeat(ctx) }

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
