package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// failJob records a failed plain-job attempt: retry with backoff, or bury
// when attempts are exhausted or the error is non-retryable.
func (e *Engine) failJob(ctx context.Context, r *Result) error {
	var out Notice
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		row, err := tx.JobGet(ctx, r.Claimed.Job.ID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !r.Claimed.owns(row) {
			return ErrStaleAttempt
		}
		buried, err := e.failAttempt(ctx, tx, r.Claimed, row, r, nil)
		out = attemptOutcome(row, r, buried)
		return err
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: fail job %d: %w", r.Claimed.Job.ID, err)
	}
	if err == nil {
		r.Notice = out
	}
	return err
}

// failAttempt applies the retry-or-bury rule to a locked row that the
// attempt owns and writes the log rows. It returns true when the job was
// buried. timeout is set when a timeout (not a handler error) ended the
// attempt.
func (e *Engine) failAttempt(ctx context.Context, tx driver.Tx, cj *Claimed, row *driver.Job, r *Result, timeout *TimeoutError) (bool, error) {
	now := e.clock.Now()
	cause := r.Err
	attempt := row.Attempts
	if row.Status == driver.JobProcessing {
		// Retried or buried, the job leaves its concurrency group's slot
		// (a stale recovery's or a timeout's as much as a worker's).
		freedSlot(ctx, row)
	}
	final := attempt >= cj.maxAttempts() || IsNonRetryable(cause) ||
		(timeout != nil && timeout.Kind == driver.TimeoutScheduleToClose) || callbackFailed(cj, cause)
	if !final && !row.ScheduleToCloseAt.IsZero() {
		// A retry that could only start after the schedule-to-close deadline
		// is pointless: the job ends now with that timeout.
		if next := now.Add(e.backoffFor(cj).Delay(attempt)); !next.Before(row.ScheduleToCloseAt) {
			final = true
			timeout = &TimeoutError{Kind: driver.TimeoutScheduleToClose, Deadline: row.ScheduleToCloseAt,
				Message: fmt.Sprintf("Activity %s schedule-to-close deadline %s leaves no time for another attempt (last error: %v).", row.Handler, rowtime.ISO(row.ScheduleToCloseAt), cause)}
			cause = timeout
		}
	}
	msg, class, trace := describeError(cause)
	if final && attempt >= MaxAttemptsLimit && cj.runtime.AskedMaxAttempts > MaxAttemptsLimit {
		msg += fmt.Sprintf(" (buried after attempt %d: max_attempts %d is more than the attempts column holds, so %d is the limit)",
			attempt, cj.runtime.AskedMaxAttempts, MaxAttemptsLimit)
	}
	logBase := func(ev driver.LogEvent) *driver.LogEntry {
		l := &driver.LogEntry{JobID: ptr(row.ID), Handler: row.Handler, Queue: row.Queue, Event: ev, Attempt: ptr(attempt), CreatedAt: now}
		if row.WorkflowID != 0 && row.StepIndex != nil {
			l.WorkflowID = row.WorkflowID
			l.StepIndex = ptr(*row.StepIndex)
		}
		return l
	}
	logs := []*driver.LogEntry{}
	if r != nil && !r.StartedAt.IsZero() {
		logs = append(logs, startedLog(cj, r.StartedAt))
	}
	clearAttemptDeadlines(row)
	if final {
		row.Status = driver.JobBuried
		row.FailedAt = now
		row.ErrorMessage = msg
		row.ScheduleToStartAt = time.Time{}
		row.ScheduleToCloseAt = time.Time{}
		b := logBase(driver.LogBuried)
		b.ErrorMessage, b.ErrorClass, b.ErrorTrace = msg, class, trace
		if r != nil && !r.StartedAt.IsZero() {
			b.DurationMS = ptr(r.Duration.Milliseconds())
		}
		logs = append(logs, b)
		f := &driver.Failure{JobID: row.ID, WorkflowID: row.WorkflowID, StepIndex: row.StepIndex, Attempt: attempt, RunNumber: cj.runNumber(),
			Category: driver.FailureApplication, NonRetryable: IsNonRetryable(cause), Message: msg, ErrorClass: class, CreatedAt: now}
		if timeout != nil {
			f.Category, f.TimeoutKind, f.DeadlineAt = driver.FailureTimeout, timeout.Kind, timeout.Deadline
		}
		var ce *ConstraintError
		if errors.As(cause, &ce) {
			f.Category = driver.FailureBudget
		}
		if err := tx.FailureInsert(ctx, f); err != nil {
			return false, err
		}
	} else {
		row.Status = driver.JobPending
		row.ReservedAt = time.Time{}
		row.ClaimToken = 0 // the next claim, Go's or Queuety PHP's, starts afresh
		// A job whose worker died did not fail: it is due again at once and
		// keeps its original due time, so it is claimed ahead of the jobs
		// that became due after it instead of waiting behind the backlog.
		if !errors.Is(cause, errStale) {
			row.AvailableAt = rowtime.Due(now, e.backoffFor(cj).Delay(attempt))
		}
		if !row.AvailableAt.After(now) {
			jobnote.Ready(ctx, row) // due again at once: wake a worker after commit
		}
		row.ErrorMessage = ""
		if s2s := cj.runtime.Timeouts.ScheduleToStart; s2s > 0 {
			row.ScheduleToStartAt = later(row.AvailableAt, rowtime.Floor(now)).Add(s2s) // a fresh window for every retry
		}
		if r != nil && !r.StartedAt.IsZero() {
			// The attempt ran here and reported: Queuety writes 'failed'
			// then 'retried'. Stale recovery and timeouts write 'retried'.
			f := logBase(driver.LogFailed)
			f.ErrorMessage, f.ErrorClass, f.ErrorTrace = msg, class, trace
			f.DurationMS = ptr(r.Duration.Milliseconds())
			logs = append(logs, f)
		}
		logs = append(logs, logBase(driver.LogRetried))
		if timeout != nil {
			if err := tx.FailureInsert(ctx, &driver.Failure{JobID: row.ID, WorkflowID: row.WorkflowID, StepIndex: row.StepIndex,
				Attempt: attempt, RunNumber: cj.runNumber(), Category: driver.FailureTimeout, TimeoutKind: timeout.Kind, Message: msg,
				ErrorClass: class, DeadlineAt: timeout.Deadline, CreatedAt: now}); err != nil {
				return false, err
			}
		}
	}
	if err := tx.JobUpdate(ctx, row); err != nil {
		return false, err
	}
	if err := tx.LogInsert(ctx, logs); err != nil {
		return false, err
	}
	if r != nil {
		r.Outcome = observe.OutcomeRetried
		if final {
			r.Outcome = observe.OutcomeBuried
		}
	}
	if final {
		if err := e.jobBuried(ctx, tx, cj, row, msg, now); err != nil { // batch failure, chain catch (package batch)
			return false, err
		}
	}
	if final && row.WorkflowID == 0 {
		// A compensation that ran out of attempts: the next one runs.
		return true, e.compensationEnded(ctx, tx, cjWithPayload(cj, row), msg, now)
	}
	return final, nil
}

// callbackAttempts is the attempt limit of the engine's callback jobs:
// batch then, catch and finally callbacks, chain catch handlers, and
// workflow deadline and cancel callbacks (compensations take the
// workflow's). The attempts after the first are for a worker that dies
// while running one (stale recovery), never for a callback that fails
// (see callbackFailed), so a callback runs once without a crash and at
// least once with one, up to callbackAttempts crashes.
const callbackAttempts = DefaultMaxAttempts

// callbackFailed reports whether cause ends a callback job for good: any
// outcome but a worker's death (errStale). Queuety calls a callback once
// and ignores its errors, so a callback that returned an error, panicked
// or timed out is buried and not run again; one whose worker died did not
// run to its end, and runs again while its attempts last.
func callbackFailed(cj *Claimed, cause error) bool {
	return isCallbackJob(cj) && !errors.Is(cause, errStale)
}

// isCallbackJob reports whether cj is one of the callback jobs of
// callbackAttempts: a Go callback carries the engine's marker
// (__queuety_callback) with its kind, a callback handed to Queuety PHP is
// a job for the bridge class.
func isCallbackJob(cj *Claimed) bool {
	if cj.Job.Handler == batch.HandlerPHPCallback || cj.Job.Handler == HandlerPHPWorkflowCallback {
		return true
	}
	if cj.payload == nil {
		return false
	}
	m, ok := mustObject(cj.payload, callbackKey)
	if !ok {
		return false
	}
	switch strField(m, "kind") {
	case "batch", "chain_catch", "deadline", "cancel":
		return true
	}
	return false
}

// callbackRuntime is the __queuety_runtime object of a callback job for
// Queuety PHP's bridge class. Queuety PHP takes a job's attempts and
// backoff from the payload's runtime options first, then from the handler
// class's config(), then from the row, in its worker and in its stale
// recovery alike. So whichever version of the bridge class is installed,
// a bridge job whose PHP worker died gets callbackAttempts, and is due
// again at once (backoff 0), as the Go engine's stale recovery does. The
// bridge class never fails (it swallows the callback's errors, as
// Queuety does), so these are attempts for crashes only.
func callbackRuntime() *phpjson.Object {
	return jobruntime.Options{MaxAttempts: callbackAttempts, Backoff: jobruntime.List{0}}.Encode()
}

// backoffFor returns the job's own backoff or the client default.
func (e *Engine) backoffFor(cj *Claimed) Backoff {
	if cj.runtime.Backoff != nil {
		return cj.runtime.Backoff
	}
	return e.cfg.DefaultBackoff
}

// clearAttemptDeadlines removes what belongs to one attempt: its
// start-to-close and heartbeat deadlines and its last heartbeat time. The
// heartbeat details stay for the next attempt to read.
func clearAttemptDeadlines(j *driver.Job) {
	j.StartToCloseAt = time.Time{}
	j.HeartbeatDeadline = time.Time{}
	j.LastHeartbeatAt = time.Time{}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func mustObject(o *phpjson.Object, k string) (*phpjson.Object, bool) {
	v, _ := o.Get(k)
	x, ok := v.(*phpjson.Object)
	return x, ok
}
