package queuety

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Engine holds the engine's state transitions: claiming, completing,
// failing, retrying, timing out and recovering jobs and workflow steps.
// Workers and sweepers drive it; applications rarely call it directly.
//
// Every transition runs in one store transaction and is fenced: a result
// from an attempt that no longer owns its job changes nothing and returns
// ErrStaleAttempt.
type Engine struct{ c *Client }

// ClaimRequest says what a worker can take.
type ClaimRequest struct {
	Queues   []string // tried in order; earlier queues win
	Handlers []string // handler names this worker can run
	Limit    int      // at most this many jobs
}

// Claimed is one job claimed for one attempt.
type Claimed struct {
	Job       *driver.Job
	ClaimedAt time.Time

	payload *phpjson.Object
	runtime runtimeOptions
	prevS2S time.Time // schedule-to-start deadline before the claim, restored on hand-back
	// preErr is set when the job cannot run at all (malformed JSON, a
	// malformed step definition). The worker reports it as the failure.
	preErr error

	// Workflow steps.
	wf    *driver.Workflow
	state *phpjson.Object
	steps []*stepDef
	step  *stepDef
}

// IsStep reports whether the job is a workflow step.
func (cj *Claimed) IsStep() bool { return cj.Job.WorkflowID != 0 && cj.Job.StepIndex != nil }

// Err returns why the job cannot run, or nil. A worker reports this error as
// the attempt's failure without calling a handler.
func (cj *Claimed) Err() error { return cj.preErr }

// Payload returns the payload a job handler sees: the stored object without
// the engine's reserved keys.
func (cj *Claimed) Payload() Payload {
	p := State{}
	if cj.payload == nil {
		return p
	}
	for _, k := range cj.payload.Keys() {
		if k == runtimeKey || k == chainKey || k == callbackKey {
			continue
		}
		v, _ := cj.payload.Get(k)
		p[k] = plain(v)
	}
	return p
}

// State returns the public workflow state a step handler sees (nil for
// plain jobs).
func (cj *Claimed) State() State {
	if cj.state == nil {
		return nil
	}
	return toState(publicState(cj.state))
}

// Info describes the attempt for the handler's context.
func (cj *Claimed) Info() JobInfo {
	j := cj.Job
	info := JobInfo{
		JobID:       j.ID,
		Attempt:     j.Attempts,
		AttemptID:   attemptID(j),
		MaxAttempts: cj.maxAttempts(),
		Queue:       j.Queue,
		Handler:     j.Handler,
		WorkflowID:  j.WorkflowID,
		StepIndex:   -1,
		Deadline:    j.StartToCloseAt,
		Heartbeat:   cj.runtime.Timeouts.Heartbeat,
		LastDetails: j.HeartbeatData,
	}
	if j.StepIndex != nil {
		info.StepIndex = *j.StepIndex
	}
	if cj.step != nil {
		info.StepName = cj.step.Name
	}
	if cj.wf != nil && !cj.wf.DeadlineAt.IsZero() {
		info.WorkflowDeadline = cj.wf.DeadlineAt
		if !cj.wf.RunDeadlineAt.IsZero() && cj.wf.RunDeadlineAt.Before(info.WorkflowDeadline) {
			info.WorkflowDeadline = cj.wf.RunDeadlineAt
		}
	} else if cj.wf != nil {
		info.WorkflowDeadline = cj.wf.RunDeadlineAt
	}
	return info
}

// maxAttempts is the effective attempt limit: __queuety_runtime first, then
// the row (Queuety's order).
func (cj *Claimed) maxAttempts() int {
	if cj.runtime.MaxAttempts > 0 {
		return cj.runtime.MaxAttempts
	}
	return max(cj.Job.MaxAttempts, 1)
}

// runNumber is the run of the step's workflow (0 for plain jobs).
func (cj *Claimed) runNumber() int {
	if cj.wf == nil {
		return 0
	}
	return max(cj.wf.RunNumber, 1)
}

// attemptID is the identity of one attempt: job id, attempt number and
// claim token.
func attemptID(j *driver.Job) string {
	return strconv.FormatInt(j.ID, 10) + "-" + strconv.Itoa(j.Attempts) + "-" + strconv.FormatInt(j.ClaimToken, 36)
}

// owns reports whether the stored row still belongs to the claimed attempt.
func (cj *Claimed) owns(row *driver.Job) bool {
	return row.Status == JobProcessing && row.Attempts == cj.Job.Attempts && row.ClaimToken == cj.Job.ClaimToken
}

func newClaimToken() int64 { return rand.Int64N(1<<62) + 1 }

// Claim claims up to req.Limit due jobs in one transaction, queue by queue
// in the given order, and returns them ready to run. Jobs whose
// schedule-to-close or schedule-to-start deadline has already passed, and
// steps of workflows already past their deadline, are timed out or failed
// instead of being returned.
func (e *Engine) Claim(ctx context.Context, req ClaimRequest) ([]*Claimed, error) {
	if req.Limit <= 0 || len(req.Handlers) == 0 || len(req.Queues) == 0 {
		return nil, nil
	}
	var out []*Claimed
	var expiredWorkflows []int64
	var failWorkflows []wfFailure
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		out, expiredWorkflows, failWorkflows = nil, nil, nil
		now := e.c.clock.Now()
		token := newClaimToken()
		var jobs []*driver.Job
		for _, q := range req.Queues {
			got, err := tx.JobClaim(ctx, driver.ClaimParams{Queue: q, Handlers: req.Handlers, Limit: req.Limit - len(jobs), Now: now, Token: token})
			if err != nil {
				return err
			}
			jobs = append(jobs, got...)
			if len(jobs) >= req.Limit {
				break
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		var wfIDs []int64
		for _, j := range jobs {
			cj := &Claimed{Job: j, ClaimedAt: now, prevS2S: j.ScheduleToStartAt}
			doc, err := decodeObject("payload", j.Payload)
			if err != nil {
				cj.preErr = NonRetryable(err)
				cj.payload = phpjson.NewObject()
			} else {
				cj.payload = doc
			}
			cj.runtime = parseRuntime(cj.payload)
			if cj.IsStep() {
				wfIDs = append(wfIDs, j.WorkflowID)
			}
			out = append(out, cj)
		}
		wfs, err := workflowsByID(ctx, tx, wfIDs, driver.LockNone)
		if err != nil {
			return err
		}
		for _, cj := range out {
			if cj.IsStep() {
				e.attachWorkflow(cj, wfs[cj.Job.WorkflowID])
			}
		}
		kept := out[:0]
		for _, cj := range out {
			if cj.wf != nil && cj.preErr == nil && workflowExpired(cj.wf, now) != "" {
				expiredWorkflows = append(expiredWorkflows, cj.wf.ID)
				continue
			}
			if kind, deadline := claimTimeout(cj.Job, now); kind != "" {
				// The claim itself is the attempt that timed out: it ends
				// here, in this transaction, instead of running.
				terr := &TimeoutError{Kind: kind, Deadline: deadline, Message: timeoutMessage(cj.Job, kind, deadline)}
				cj.Job.ClaimToken = 0
				buried, err := e.failAttempt(ctx, tx, cj, cj.Job, &Result{Claimed: cj, Err: terr}, terr)
				if err != nil {
					return err
				}
				if buried && cj.Job.WorkflowID != 0 {
					failWorkflows = append(failWorkflows, wfFailure{id: cj.Job.WorkflowID, jobID: cj.Job.ID, msg: cj.Job.ErrorMessage})
				}
				continue
			}
			if err := e.armAttempt(ctx, tx, cj, now); err != nil {
				return err
			}
			kept = append(kept, cj)
		}
		out = kept
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: claim: %w", err)
	}
	for _, id := range uniqueIDs(expiredWorkflows) {
		if _, err := e.ExpireWorkflow(ctx, id); err != nil {
			e.c.log.Error("queuety: expire workflow found at claim", "workflow_id", id, "err", err)
		}
	}
	for _, f := range failWorkflows {
		if err := e.failWorkflow(ctx, f); err != nil {
			e.c.log.Error("queuety: fail workflow of job timed out at claim", "workflow_id", f.id, "err", err)
		}
	}
	return out, nil
}

// armAttempt sets the per-attempt deadlines on a freshly claimed job.
func (e *Engine) armAttempt(ctx context.Context, tx driver.Tx, cj *Claimed, now time.Time) error {
	j := cj.Job
	stc := cj.runtime.startToClose()
	hb := cj.runtime.Timeouts.Heartbeat
	if stc == 0 && hb == 0 && j.ScheduleToStartAt.IsZero() {
		return nil
	}
	j.ScheduleToStartAt = time.Time{}
	if stc > 0 {
		j.StartToCloseAt = now.Add(stc)
	}
	if hb > 0 {
		j.HeartbeatDeadline = now.Add(hb)
	}
	return tx.JobUpdate(ctx, j)
}

// claimTimeout returns the activity timeout that has already passed for a
// job being claimed (schedule-to-close, then schedule-to-start) and its
// deadline.
func claimTimeout(j *driver.Job, now time.Time) (TimeoutKind, time.Time) {
	if !j.ScheduleToCloseAt.IsZero() && !now.Before(j.ScheduleToCloseAt) {
		return TimeoutScheduleToClose, j.ScheduleToCloseAt
	}
	if !j.ScheduleToStartAt.IsZero() && !now.Before(j.ScheduleToStartAt) {
		return TimeoutScheduleToStart, j.ScheduleToStartAt
	}
	return "", time.Time{}
}

// Result is the outcome of one attempt, reported by a worker.
type Result struct {
	Claimed   *Claimed
	Err       error // nil for success
	Output    State // a step's output; nil for plain jobs
	StartedAt time.Time
	Duration  time.Duration
}

// Finish records the outcome of one attempt: completion, retry, burial or,
// for a step, advancing the workflow. It returns ErrStaleAttempt when the
// attempt no longer owns its job.
func (e *Engine) Finish(ctx context.Context, r *Result) error {
	if r.Err == nil && r.Claimed.preErr != nil {
		r.Err = r.Claimed.preErr
	}
	switch {
	case r.Claimed.IsStep():
		if _, can := asContinueAsNew(r.Err); r.Err != nil && !can {
			return e.failStep(ctx, r)
		}
		return e.completeStep(ctx, r)
	case r.Err != nil:
		return e.failJob(ctx, r)
	default:
		errs, err := e.CompleteJobs(ctx, []*Result{r})
		if err != nil {
			return err
		}
		return errs[0]
	}
}

// CompleteJobs records successful plain-job attempts in one transaction:
// the jobs become completed and get their started/completed log rows. The
// returned slice holds, per result, nil or ErrStaleAttempt.
//
// The fast path completes each claim's jobs with one guarded UPDATE (still
// processing, same claim token, same attempt). Only when a row no longer
// matches does it fall back to locking the rows and checking them one by
// one.
func (e *Engine) CompleteJobs(ctx context.Context, results []*Result) ([]error, error) {
	errs := make([]error, len(results))
	if len(results) == 0 {
		return errs, nil
	}
	jobs := make([]*driver.Job, len(results))
	for i, r := range results {
		jobs[i] = r.Claimed.Job
	}
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.c.clock.Now()
		if err := completeClaimed(ctx, tx, jobs, now); err != nil {
			return err
		}
		logs := make([]*driver.LogEntry, 0, 2*len(results))
		for _, r := range results {
			logs = append(logs, completedLogs(r, now)...)
		}
		return tx.LogInsert(ctx, logs)
	})
	if errors.Is(err, errClaimMismatch) {
		return e.completeJobsChecked(ctx, results)
	}
	if err != nil {
		return nil, fmt.Errorf("queuety: complete jobs: %w", err)
	}
	return errs, nil
}

// errClaimMismatch rolls back a batch completion in which some row no
// longer matched its claim; the caller then checks the rows one by one.
var errClaimMismatch = errors.New("a completed row no longer matched its claim")

// completeClaimed completes jobs that are still processing under the claim
// token and attempt number each one was claimed with, with one guarded
// UPDATE per claim. It returns errClaimMismatch when some row did not
// match.
func completeClaimed(ctx context.Context, tx driver.Tx, jobs []*driver.Job, now time.Time) error {
	type claim struct {
		token    int64
		attempts int
	}
	groups := map[claim][]int64{}
	var order []claim
	for _, j := range jobs {
		k := claim{j.ClaimToken, j.Attempts}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j.ID)
	}
	for _, k := range order {
		changed, err := tx.JobCompleteClaimed(ctx, groups[k], k.token, k.attempts, now)
		if err != nil {
			return err
		}
		if changed != int64(len(groups[k])) {
			return errClaimMismatch
		}
	}
	return nil
}

// completeJobsChecked is CompleteJobs' careful path: lock the rows, check
// each against its claim, complete the owned ones.
func (e *Engine) completeJobsChecked(ctx context.Context, results []*Result) ([]error, error) {
	errs := make([]error, len(results))
	ids := make([]int64, len(results))
	for i, r := range results {
		ids[i] = r.Claimed.Job.ID
	}
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.c.clock.Now()
		byID, err := jobsByID(ctx, tx, ids, driver.LockUpdate)
		if err != nil {
			return err
		}
		var done []int64
		var logs []*driver.LogEntry
		for i, r := range results {
			row := byID[r.Claimed.Job.ID]
			if row == nil || !r.Claimed.owns(row) {
				errs[i] = ErrStaleAttempt
				continue
			}
			errs[i] = nil
			done = append(done, row.ID)
			logs = append(logs, completedLogs(r, now)...)
		}
		if len(done) == 0 {
			return nil
		}
		if err := tx.JobComplete(ctx, done, now); err != nil {
			return err
		}
		return tx.LogInsert(ctx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: complete jobs: %w", err)
	}
	return errs, nil
}

// completedLogs are the 'started' and 'completed' rows of a successful
// plain-job attempt.
func completedLogs(r *Result, now time.Time) []*driver.LogEntry {
	j := r.Claimed.Job
	return []*driver.LogEntry{startedLog(r.Claimed, r.StartedAt), {
		JobID: ptr(j.ID), Handler: j.Handler, Queue: j.Queue, Event: driver.LogCompleted,
		Attempt: ptr(j.Attempts), DurationMS: ptr(r.Duration.Milliseconds()), CreatedAt: now,
	}}
}

// startedLog is the 'started' row of an attempt. The engine writes it with
// the attempt's outcome, stamped with the start time, so a job handed back
// unstarted leaves no trace.
func startedLog(cj *Claimed, startedAt time.Time) *driver.LogEntry {
	j := cj.Job
	if startedAt.IsZero() {
		startedAt = cj.ClaimedAt
	}
	l := &driver.LogEntry{JobID: ptr(j.ID), Handler: j.Handler, Queue: j.Queue, Event: driver.LogStarted, Attempt: ptr(j.Attempts), CreatedAt: startedAt}
	if cj.IsStep() {
		l.WorkflowID = j.WorkflowID
		l.StepIndex = ptr(*j.StepIndex)
	}
	return l
}

// failJob records a failed plain-job attempt: retry with backoff, or bury
// when attempts are exhausted or the error is non-retryable.
func (e *Engine) failJob(ctx context.Context, r *Result) error {
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		row, err := tx.JobGet(ctx, r.Claimed.Job.ID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !r.Claimed.owns(row) {
			return ErrStaleAttempt
		}
		_, err = e.failAttempt(ctx, tx, r.Claimed, row, r, nil)
		return err
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: fail job %d: %w", r.Claimed.Job.ID, err)
	}
	return err
}

// failAttempt applies the retry-or-bury rule to a locked row that the
// attempt owns and writes the log rows. It returns true when the job was
// buried. timeout is set when a timeout (not a handler error) ended the
// attempt.
func (e *Engine) failAttempt(ctx context.Context, tx driver.Tx, cj *Claimed, row *driver.Job, r *Result, timeout *TimeoutError) (bool, error) {
	now := e.c.clock.Now()
	cause := r.Err
	attempt := row.Attempts
	final := attempt >= cj.maxAttempts() || IsNonRetryable(cause) ||
		(timeout != nil && timeout.Kind == TimeoutScheduleToClose)
	if !final && !row.ScheduleToCloseAt.IsZero() {
		// A retry that could only start after the schedule-to-close deadline
		// is pointless: the job ends now with that timeout.
		if next := now.Add(e.backoffFor(cj).Delay(attempt)); !next.Before(row.ScheduleToCloseAt) {
			final = true
			timeout = &TimeoutError{Kind: TimeoutScheduleToClose, Deadline: row.ScheduleToCloseAt,
				Message: fmt.Sprintf("Activity %s schedule-to-close deadline %s leaves no time for another attempt (last error: %v).", row.Handler, isoTime(row.ScheduleToCloseAt), cause)}
			cause = timeout
		}
	}
	msg, class, trace := describeError(cause)
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
		row.Status = JobBuried
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
		if err := tx.FailureInsert(ctx, f); err != nil {
			return false, err
		}
	} else {
		delay := e.backoffFor(cj).Delay(attempt)
		row.Status = JobPending
		row.ReservedAt = time.Time{}
		row.AvailableAt = dueAt(now, delay)
		row.ErrorMessage = ""
		if s2s := cj.runtime.Timeouts.ScheduleToStart; s2s > 0 {
			row.ScheduleToStartAt = row.AvailableAt.Add(s2s) // a fresh window for every retry
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
	return final, tx.LogInsert(ctx, logs)
}

// backoffFor returns the job's own backoff or the client default.
func (e *Engine) backoffFor(cj *Claimed) Backoff {
	if cj.runtime.Backoff != nil {
		return cj.runtime.Backoff
	}
	return e.c.cfg.backoff
}

// clearAttemptDeadlines removes what belongs to one attempt: its
// start-to-close and heartbeat deadlines and its last heartbeat time. The
// heartbeat details stay for the next attempt to read.
func clearAttemptDeadlines(j *driver.Job) {
	j.StartToCloseAt = time.Time{}
	j.HeartbeatDeadline = time.Time{}
	j.LastHeartbeatAt = time.Time{}
}

// Release hands claimed jobs that never started back to the queue: pending
// again, with the claim's attempt taken back, so nothing is lost or
// counted. Jobs this process no longer owns are left alone.
func (e *Engine) Release(ctx context.Context, jobs []*Claimed) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	for i, cj := range jobs {
		ids[i] = cj.Job.ID
	}
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		byID, err := jobsByID(ctx, tx, ids, driver.LockUpdate)
		if err != nil {
			return err
		}
		for _, cj := range jobs {
			row := byID[cj.Job.ID]
			if row == nil || !cj.owns(row) {
				continue
			}
			row.Status = JobPending
			row.Attempts = max(row.Attempts-1, 0)
			row.ReservedAt = time.Time{}
			row.ClaimToken = 0
			row.ScheduleToStartAt = cj.prevS2S
			clearAttemptDeadlines(row)
			if err := tx.JobUpdate(ctx, row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queuety: release jobs: %w", err)
	}
	return nil
}

// RenewLeases refreshes reserved_at on the jobs this process is running, so
// stale recovery leaves them alone, and reports the ones it no longer owns
// with the reason (their workflow failed, they were recovered as stale or
// timed out).
func (e *Engine) RenewLeases(ctx context.Context, jobs []*Claimed) (map[int64]error, error) {
	lost := map[int64]error{}
	if len(jobs) == 0 {
		return lost, nil
	}
	ids := make([]int64, len(jobs))
	for i, cj := range jobs {
		ids[i] = cj.Job.ID
	}
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		clear(lost)
		now := e.c.clock.Now()
		byID, err := jobsByID(ctx, tx, ids, driver.LockNone)
		if err != nil {
			return err
		}
		byToken := map[int64][]int64{}
		for _, cj := range jobs {
			row := byID[cj.Job.ID]
			switch {
			case row == nil:
				lost[cj.Job.ID] = fmt.Errorf("%w: job %d was deleted", ErrLeaseLost, cj.Job.ID)
			case !cj.owns(row):
				lost[cj.Job.ID] = lostReason(row)
			default:
				byToken[row.ClaimToken] = append(byToken[row.ClaimToken], row.ID)
			}
		}
		for token, ids := range byToken {
			if _, err := tx.JobTouch(ctx, ids, token, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: renew leases: %w", err)
	}
	return lost, nil
}

// lostReason explains why an attempt lost its job.
func lostReason(row *driver.Job) error {
	if row.ErrorMessage == ErrDeadlineExceeded.Error() {
		return fmt.Errorf("%w: %w: the job's workflow passed its deadline", ErrLeaseLost, ErrDeadlineExceeded)
	}
	if row.ErrorMessage != "" {
		return fmt.Errorf("%w: job is %s: %s", ErrLeaseLost, row.Status, row.ErrorMessage)
	}
	return fmt.Errorf("%w: job is %s under another attempt", ErrLeaseLost, row.Status)
}

// StaleMessage is the error stored on a job buried by stale recovery.
const StaleMessage = "Stale: worker died without completing."

// RecoverStale takes back up to limit jobs whose claim has not been renewed
// within the stale timeout: each is retried with backoff or, when its
// attempts are used up, buried (failing its workflow). Rows are claimed
// with SKIP LOCKED and changed under their lock, so any number of
// concurrent sweepers recover each job once. It returns how many jobs it
// recovered and whether a full batch was found.
func (e *Engine) RecoverStale(ctx context.Context, limit int) (int, bool, error) {
	if limit <= 0 {
		limit = 100
	}
	var n int
	var more bool
	var failWorkflows []wfFailure
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		n, failWorkflows = 0, nil
		now := e.c.clock.Now()
		rows, err := tx.JobFindStale(ctx, driver.StaleParams{ReservedBefore: now.Add(-e.c.cfg.staleTimeout), Limit: limit, Lock: driver.LockSkipLocked})
		if err != nil {
			return err
		}
		more = len(rows) >= limit
		var wfIDs []int64
		for _, row := range rows {
			if row.WorkflowID != 0 && row.StepIndex != nil {
				wfIDs = append(wfIDs, row.WorkflowID)
			}
		}
		wfs, err := workflowsByID(ctx, tx, wfIDs, driver.LockNone)
		if err != nil {
			return err
		}
		for _, row := range rows {
			cj := takeOver(row, wfs[row.WorkflowID])
			buried, err := e.failAttempt(ctx, tx, cj, row, &Result{Claimed: cj, Err: errors.New(StaleMessage)}, nil)
			if err != nil {
				return err
			}
			if buried && row.WorkflowID != 0 {
				failWorkflows = append(failWorkflows, wfFailure{id: row.WorkflowID, jobID: row.ID, msg: StaleMessage})
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuety: recover stale jobs: %w", err)
	}
	for _, f := range failWorkflows {
		if err := e.failWorkflow(ctx, f); err != nil {
			e.c.log.Error("queuety: fail workflow of stale job", "workflow_id", f.id, "err", err)
		}
	}
	return n, more, nil
}

// jobsByID reads the jobs with the given ids with one statement, and
// returns them by id.
func jobsByID(ctx context.Context, tx driver.Tx, ids []int64, lock driver.LockMode) (map[int64]*driver.Job, error) {
	rows, err := tx.JobGetMany(ctx, ids, lock)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*driver.Job, len(rows))
	for _, row := range rows {
		byID[row.ID] = row
	}
	return byID, nil
}

// workflowsByID reads the workflows with the given ids (repeats allowed)
// with one statement, and returns them by id.
func workflowsByID(ctx context.Context, tx driver.Tx, ids []int64, lock driver.LockMode) (map[int64]*driver.Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	wfs, err := tx.WorkflowGetMany(ctx, uniqueIDs(ids), lock)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*driver.Workflow, len(wfs))
	for _, wf := range wfs {
		byID[wf.ID] = wf
	}
	return byID, nil
}

// takeOver returns a Claimed for a row whose attempt the engine ends
// itself (stale recovery, timeouts), with the payload's runtime options
// when the payload decodes. wf is the step's workflow, or nil. It voids
// the row's claim, so a late result from that attempt changes nothing.
func takeOver(row *driver.Job, wf *driver.Workflow) *Claimed {
	row.ClaimToken = 0
	cj := &Claimed{Job: row, wf: wf}
	if doc, err := decodeObject("payload", row.Payload); err == nil {
		cj.payload = doc
		cj.runtime = parseRuntime(doc)
	}
	return cj
}

// Heartbeat records progress for a running attempt: it renews the claim,
// stores details (when non-nil) for a later attempt to read, and pushes
// the heartbeat deadline out. It returns ErrStaleAttempt when the attempt
// no longer owns the job.
func (e *Engine) Heartbeat(ctx context.Context, cj *Claimed, details []byte) error {
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.c.clock.Now()
		row, err := tx.JobGet(ctx, cj.Job.ID, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !cj.owns(row) {
			return ErrStaleAttempt
		}
		row.ReservedAt = now
		row.LastHeartbeatAt = now
		if details != nil {
			row.HeartbeatData = details
		}
		if hb := cj.runtime.Timeouts.Heartbeat; hb > 0 {
			row.HeartbeatDeadline = now.Add(hb)
		}
		return tx.JobUpdate(ctx, row)
	})
	if err != nil && !errors.Is(err, ErrStaleAttempt) {
		return fmt.Errorf("queuety: heartbeat job %d: %w", cj.Job.ID, err)
	}
	return err
}

// describeError splits an error into the message, class and trace stored
// in a log row.
func describeError(err error) (msg, class, trace string) {
	if err == nil {
		return "", "", ""
	}
	msg = err.Error()
	var pe *PanicError
	if errors.As(err, &pe) {
		return msg, "panic", pe.Stack
	}
	class = errorClass(err)
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "%s: %s\n", reflect.TypeOf(e), e.Error())
	}
	return msg, class, strings.TrimSuffix(b.String(), "\n")
}

// errorClass names an error's type the way Queuety names exception
// classes: the first type in the chain that is not a plain wrapper.
func errorClass(err error) string {
	if c, ok := err.(interface{ ErrorClass() string }); ok {
		return c.ErrorClass()
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*nonRetryableError); ok {
			continue
		}
		t := strings.TrimPrefix(reflect.TypeOf(e).String(), "*")
		if strings.HasPrefix(t, "fmt.") || strings.HasPrefix(t, "errors.") {
			continue
		}
		return t
	}
	return "error"
}

// isoTime formats a time as ISO 8601 in UTC.
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

func ptr[T any](v T) *T { return &v }

func uniqueIDs(ids []int64) []int64 {
	seen := map[int64]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// plain converts a decoded JSON tree into plain Go values for handlers.
func plain(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		return x.ToMap()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// HasDue reports whether any job is due for a worker with these queues and
// handlers, without locking anything. Once-mode workers use it to tell "the
// queue is empty" from "other workers hold the due rows right now".
func (e *Engine) HasDue(ctx context.Context, queues, handlers []string) (bool, error) {
	var due bool
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		due = false
		now := e.c.clock.Now()
		for _, q := range queues {
			ok, err := tx.JobHasDue(ctx, driver.ClaimParams{Queue: q, Handlers: handlers, Now: now})
			if err != nil {
				return err
			}
			if ok {
				due = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("queuety: check due jobs: %w", err)
	}
	return due, nil
}
