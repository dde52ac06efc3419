package driver

import "context"

// WorkflowAdvance is one workflow row a step transition writes, with the
// row it was computed from: the status, current step and state a claim
// read. WorkflowAdvanceTx writes it only while the row still holds them.
type WorkflowAdvance struct {
	// Workflow holds the new status, state, current step, completed_at
	// and wait_deadline_at; its other columns are not written.
	Workflow *Workflow
	// FromStatus, FromStep and FromState are what the row must still
	// hold.
	FromStatus WorkflowStatus
	FromStep   int
	FromState  []byte
}

// WorkflowAdvanceTx is an optional Tx capability: a guarded write of many
// workflows that needs no locking read before it. The engine advances a
// batch of completed steps with it from the rows their claims read, and
// falls back to locking and reading the rows when a store lacks it or a
// row changed.
type WorkflowAdvanceTx interface {
	// WorkflowAdvanceMany writes each advance's status, state,
	// current_step, completed_at and wait_deadline_at, with one statement
	// for many rows, where the row still has its FromStatus, FromStep and
	// FromState. It locks the rows it matches and returns how many it
	// matched (rows whose new values equal the old count too); each
	// workflow id appears at most once.
	WorkflowAdvanceMany(ctx context.Context, advances []WorkflowAdvance) (int64, error)
}

// JobListManyTx is an optional Tx capability: JobListByWorkflow for
// several workflows in one statement. The engine settles the for-each
// steps of many workflows with it, and reads each workflow's jobs with
// JobListByWorkflow when a store lacks it.
type JobListManyTx interface {
	// JobListByWorkflows returns the jobs of the given workflows,
	// optionally only those with the given statuses, in id order (locked
	// in that order with LockUpdate).
	JobListByWorkflows(ctx context.Context, workflowIDs []int64, statuses []JobStatus, lock LockMode) ([]*Job, error)
}
