package driver

import (
	"context"
	"time"
)

// Runtimes of a WorkflowEndsTx mark.
const (
	// EndedByGo marks a workflow the Go engine failed or cancelled: it
	// handled the workflow's compensations and cancel callback itself.
	EndedByGo = "go"
	// EndedElsewhere marks a workflow another engine (Queuety PHP) failed
	// or cancelled, whose Go compensations or cancel callback a Go sweep
	// enqueued.
	EndedElsewhere = "php"
	// EndedNothingToRun marks a workflow another engine ended with no
	// compensation or cancel callback left for the Go engine.
	EndedNothingToRun = "none"
)

// WorkflowEndsTx holds the operations on the Go engine's workflow ends
// table ({prefix}queuety_go_workflow_ends): one row per failed or
// cancelled workflow whose compensations and cancel callback the Go engine
// has dealt with, so a sweep finds those another engine ended and runs
// their Go handlers once.
type WorkflowEndsTx interface {
	// WorkflowEndMark records that the workflow's end was dealt with, with
	// runtime (EndedByGo, EndedElsewhere, EndedNothingToRun). It reports
	// false, and changes nothing, when the workflow is already marked.
	// Callers hold the workflow's row lock.
	WorkflowEndMark(ctx context.Context, workflowID int64, runtime string, at time.Time) (bool, error)
	// WorkflowEndUnmark removes the workflow's mark (a retried workflow
	// may end again).
	WorkflowEndUnmark(ctx context.Context, workflowID int64) error
	// WorkflowFindEndedElsewhere returns up to p.Limit workflows without a
	// mark that failed (failed_at) or were cancelled (completed_at) at or
	// after p.Since, except p.Exclude, in id order, locked with p.Lock.
	WorkflowFindEndedElsewhere(ctx context.Context, p ExpiredParams) ([]*Workflow, error)
}
