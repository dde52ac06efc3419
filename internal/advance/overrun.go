package advance

// This file fails workflows that nothing would ever move on because their
// row says they are past their last step: status running with
// current_step greater than total_steps. The engine completes a workflow
// when it advances to total_steps, so such a row was written by hand, by
// an older or foreign writer, or lost a write: which steps ran cannot be
// told from it, and there is no step job to run. Completing it could hand
// a parent a result it never had, so it is failed with a message that says
// what the row holds, and its state is kept for whoever looks into it.
//
// No index finds such rows (the condition compares two columns), so the
// sweep (internal/sweep) walks the running workflows through the status
// index a window at a time; this file holds the transition it triggers.

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

// overrunMessage is the error stored on a workflow failed for being past
// its last step.
func overrunMessage(wf *driver.Workflow) string {
	return fmt.Sprintf("Workflow %d is at step %d of %d: its current step is past its last step, so no step can run. "+
		"It was failed by the engine's sweep; its state is kept.", wf.ID, wf.CurrentStep, wf.TotalSteps)
}

// FailOverrun fails one workflow past its last step, after checking under
// its lock that it still is: open jobs buried, workflow_failed logged, an
// internal failure recorded, the parent and waiters told, compensation
// started when the workflow asks for it. It reports whether it failed it.
func (s *Service) FailOverrun(ctx context.Context, id int64) (bool, error) {
	var failed bool
	var msg string
	err := s.store.InTx(ctx, func(tx driver.Tx) error {
		failed = false
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if wf.Status != driver.WorkflowRunning || wf.CurrentStep <= wf.TotalSteps {
			return nil
		}
		now := s.clock.Now()
		msg = overrunMessage(wf)
		if err := s.FailWorkflowLocked(ctx, tx, wf, 0, msg, now); err != nil {
			return err
		}
		failed = true
		return tx.FailureInsert(ctx, &driver.Failure{WorkflowID: wf.ID, RunNumber: max(wf.RunNumber, 1),
			Category: driver.FailureInternal, NonRetryable: true, Message: msg, CreatedAt: now})
	})
	if err != nil {
		return false, fmt.Errorf("queuety: fail workflow %d past its last step: %w", id, err)
	}
	if failed {
		s.log.Warn("queuety: workflow failed: its row is past its last step", "workflow_id", id, "error", msg)
	}
	return failed, nil
}
