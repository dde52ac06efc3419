package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/store/driver"
)

// resolveTimeout returns the activity timeout that has passed for a job at
// now, by a fixed priority (not by which deadline came first):
// schedule-to-close, schedule-to-start, heartbeat, start-to-close.
func resolveTimeout(j *driver.Job, now time.Time) (driver.TimeoutKind, time.Time) {
	passed := func(t time.Time) bool { return !t.IsZero() && !now.Before(t) }
	open := j.Status == driver.JobPending || j.Status == driver.JobProcessing
	switch {
	case open && passed(j.ScheduleToCloseAt):
		return driver.TimeoutScheduleToClose, j.ScheduleToCloseAt
	case j.Status == driver.JobPending && passed(j.ScheduleToStartAt):
		return driver.TimeoutScheduleToStart, j.ScheduleToStartAt
	case j.Status == driver.JobProcessing && passed(j.HeartbeatDeadline):
		return driver.TimeoutHeartbeat, j.HeartbeatDeadline
	case j.Status == driver.JobProcessing && passed(j.StartToCloseAt):
		return driver.TimeoutStartToClose, j.StartToCloseAt
	}
	return "", time.Time{}
}

// timeoutMessage words a timeout the way Durable Workflow does.
func timeoutMessage(j *driver.Job, kind driver.TimeoutKind, deadline time.Time) string {
	switch kind {
	case driver.TimeoutScheduleToStart:
		return fmt.Sprintf("Activity %s schedule-to-start deadline expired at %s.", j.Handler, rowtime.ISO(deadline))
	case driver.TimeoutScheduleToClose:
		return fmt.Sprintf("Activity %s schedule-to-close deadline expired at %s.", j.Handler, rowtime.ISO(deadline))
	case driver.TimeoutHeartbeat:
		last := "never"
		if !j.LastHeartbeatAt.IsZero() {
			last = rowtime.ISO(j.LastHeartbeatAt)
		}
		return fmt.Sprintf("Activity %s heartbeat deadline expired at %s (last heartbeat: %s).", j.Handler, rowtime.ISO(deadline), last)
	default:
		return fmt.Sprintf("Activity %s start-to-close deadline expired at %s.", j.Handler, rowtime.ISO(deadline))
	}
}

// EnforceTimeout applies an expired activity timeout to one job, under its
// lock (and its workflow's, locked first). It re-checks the deadlines
// against a fresh now, so a heartbeat or a result that got in first wins
// and nothing happens. Schedule-to-start, start-to-close and heartbeat
// timeouts retry while attempts remain (a timed-out wait in the queue
// counts as an attempt); schedule-to-close is final. A final timeout buries
// the job with a *TimeoutError message and fails its workflow. It reports
// whether it acted.
func (e *Engine) EnforceTimeout(ctx context.Context, jobID int64) (bool, error) {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	var acted bool
	var failWF *wfFailure
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		acted, failWF = false, nil
		peek, err := tx.JobGet(ctx, jobID, driver.LockNone)
		if err != nil {
			return err
		}
		var wf *driver.Workflow
		if peek.WorkflowID != 0 {
			wf, err = tx.WorkflowGet(ctx, peek.WorkflowID, driver.LockUpdate)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		row, err := tx.JobGet(ctx, jobID, driver.LockUpdate)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		kind, deadline := resolveTimeout(row, now)
		if kind == "" {
			if row.Status != driver.JobPending && row.Status != driver.JobProcessing && hasDeadlines(row) {
				// Finished elsewhere (for example by a PHP worker) with its
				// deadlines left set: clear them so the sweep skips it.
				clearAttemptDeadlines(row)
				row.ScheduleToStartAt, row.ScheduleToCloseAt = time.Time{}, time.Time{}
				return tx.JobUpdate(ctx, row)
			}
			return nil
		}
		acted = true
		cj := takeOver(row, wf)
		terr := &TimeoutError{Kind: kind, Deadline: deadline, Message: timeoutMessage(row, kind, deadline)}
		if row.Status == driver.JobPending {
			row.Attempts = min(row.Attempts+1, MaxAttemptsLimit) // the attempt that never started counts
		}
		buried, err := e.failAttempt(ctx, tx, cj, row, &Result{Claimed: cj, Err: terr}, terr)
		if err != nil {
			return err
		}
		if buried && wf != nil {
			return e.failWorkflowLocked(ctx, tx, wf, row.ID, row.ErrorMessage, now)
		}
		if buried && row.WorkflowID != 0 && wf == nil {
			failWF = &wfFailure{id: row.WorkflowID, jobID: row.ID, msg: row.ErrorMessage}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("queuety: enforce timeout of job %d: %w", jobID, err)
	}
	if failWF != nil {
		if err := e.failWorkflow(ctx, *failWF); err != nil {
			return acted, err
		}
	}
	return acted, nil
}

func hasDeadlines(j *driver.Job) bool {
	return !j.ScheduleToStartAt.IsZero() || !j.StartToCloseAt.IsZero() || !j.ScheduleToCloseAt.IsZero() || !j.HeartbeatDeadline.IsZero()
}

// workflowExpired returns the timeout kind that has passed for a
// non-terminal workflow at now, or "". The execution deadline wins when
// both have passed.
func workflowExpired(wf *driver.Workflow, now time.Time) driver.TimeoutKind {
	if wf.Status.Terminal() {
		return ""
	}
	if !wf.DeadlineAt.IsZero() && !now.Before(wf.DeadlineAt) {
		return driver.TimeoutExecution
	}
	if !wf.RunDeadlineAt.IsZero() && !now.Before(wf.RunDeadlineAt) {
		return driver.TimeoutRun
	}
	return ""
}
