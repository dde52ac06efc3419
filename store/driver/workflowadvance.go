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
