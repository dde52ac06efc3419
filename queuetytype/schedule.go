package queuetytype

import (
	"strings"
	"time"
)

// ScheduleType is how a schedule's expression is read (Queuety's
// expression_type column).
type ScheduleType string

// Schedule types.
const (
	ScheduleInterval ScheduleType = "interval" // "5 minutes", "1 hour", "3600 seconds"
	ScheduleCron     ScheduleType = "cron"     // "0 3 * * *", "@daily"
)

// OverlapPolicy says what a firing does while the schedule's previous run
// is still pending or processing.
type OverlapPolicy string

// Overlap policies (Queuety's overlap_policy column).
const (
	// OverlapAllow dispatches every firing, whatever is still running.
	OverlapAllow OverlapPolicy = "allow"
	// OverlapSkip drops a firing while the previous run is active.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBuffer keeps at most one firing waiting while the previous run
	// is active, and dispatches it at the first tick after that run ends.
	// Further firings in the meantime are dropped.
	OverlapBuffer OverlapPolicy = "buffer"
)

// CatchUpPolicy says what happens when a tick finds several slots of a
// schedule due at once: slots missed while no worker ticked (downtime, a
// database outage).
type CatchUpPolicy string

// Catch-up policies.
const (
	// CatchUpOnce fires once for all missed slots, then continues with the
	// next slot after now. It is the default.
	CatchUpOnce CatchUpPolicy = "once"
	// CatchUpAll fires once per missed slot, up to the engine's catch-up
	// bound per tick; the following ticks fire the rest.
	CatchUpAll CatchUpPolicy = "all"
	// CatchUpNone fires only when no slot was missed; after downtime it
	// skips straight to the next slot after now.
	CatchUpNone CatchUpPolicy = "none"
)

// WorkflowSchedulePrefix starts the handler key of workflow schedules.
const WorkflowSchedulePrefix = "__queuety_workflow:"

// Schedule is one row of Queuety's schedules table plus the Go engine's
// columns. Handler is unique: one schedule per handler string (for
// workflow schedules, "__queuety_workflow:" + a key).
type Schedule struct {
	ID             int64         // the schedule's id
	Handler        string        // the job handler it dispatches, or the workflow key with its prefix
	Payload        []byte        // JSON object: the job's payload, or the workflow's initial state
	Queue          string        // the queue of the jobs or workflows it dispatches
	Expression     string        // the interval ("5 minutes") or cron expression
	ExpressionType ScheduleType  // how Expression is read
	LastRun        time.Time     // when it last fired
	NextRun        time.Time     // when it fires next
	Overlap        OverlapPolicy // what a firing does while the previous run is active
	Enabled        bool          // whether it fires
	CreatedAt      time.Time     // when it was created

	// Workflow is the definition a workflow schedule dispatches, in
	// Queuety's runtime-definition shape (nil for job schedules).
	Workflow []byte
	// CatchUp is the catch-up policy ("" reads as CatchUpOnce).
	CatchUp CatchUpPolicy
	// LastRunRef is the job or workflow id the latest firing dispatched.
	LastRunRef int64
	// PendingRun is the slot a buffered firing waits for (OverlapBuffer).
	PendingRun time.Time
}

// IsWorkflow reports whether the schedule dispatches workflows.
func (s *Schedule) IsWorkflow() bool { return len(s.Workflow) > 0 }

// WorkflowKey returns the key of a workflow schedule: its handler without
// the "__queuety_workflow:" prefix ("" and false for a job schedule).
func (s *Schedule) WorkflowKey() (string, bool) {
	if key, ok := strings.CutPrefix(s.Handler, WorkflowSchedulePrefix); ok {
		return key, true
	}
	return "", false
}

// EffectiveCatchUp returns the catch-up policy the tick applies: CatchUp,
// or CatchUpOnce for rows that have none (written by Queuety PHP).
func (s *Schedule) EffectiveCatchUp() CatchUpPolicy {
	if s.CatchUp == "" {
		return CatchUpOnce
	}
	return s.CatchUp
}
