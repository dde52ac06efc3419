package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/steptrace"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// ClaimRequest says what a worker can take.
type ClaimRequest struct {
	Queues   []string // tried in order; earlier queues win
	Handlers []string // handler names this worker can run
	Limit    int      // at most this many jobs
	// Admission, when set, holds the claim within rate limits,
	// concurrency groups and cost budgets (package admission).
	Admission *admission.Admission

	// ids, when set, restricts the claim to these jobs (the search for a
	// row that makes claims fail, claimrows.go); Admission is then nil.
	ids []int64
}

// Claimed is one job claimed for one attempt.
type Claimed struct {
	Job       *driver.Job
	ClaimedAt time.Time

	payload *phpjson.Object
	runtime jobruntime.Options
	prevS2S time.Time // schedule-to-start deadline before the claim, restored on hand-back
	// preErr is set when the job cannot run at all (malformed JSON, a
	// malformed step definition). The worker reports it as the failure.
	preErr error

	// flow is the workflow side of a step job (zero for a plain job).
	flow advance.Step
	// public is the workflow's public state as the claims of the batch
	// that share flow.State share it (publicstate.go).
	public *publicState
	// trace is the attempt's trace: the artifacts it stored, its runtime
	// trace metadata and its streamed chunks (nil: not traced).
	trace *steptrace.Trace
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
		p[k] = workflowstate.Plain(v)
	}
	return p
}

// State returns the public workflow state a step handler sees (nil for
// plain jobs).
func (cj *Claimed) State() State {
	if cj.flow.State == nil {
		return nil
	}
	return cj.public.handlerState(cj.flow.State)
}

// Info describes the attempt for the handler's context.
func (cj *Claimed) Info() RunningAttempt {
	j := cj.Job
	info := RunningAttempt{
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
	if cj.flow.Def != nil {
		info.StepName = cj.flow.Def.Name
	}
	if cj.flow.Workflow != nil && !cj.flow.Workflow.DeadlineAt.IsZero() {
		info.WorkflowDeadline = cj.flow.Workflow.DeadlineAt
		if !cj.flow.Workflow.RunDeadlineAt.IsZero() && cj.flow.Workflow.RunDeadlineAt.Before(info.WorkflowDeadline) {
			info.WorkflowDeadline = cj.flow.Workflow.RunDeadlineAt
		}
	} else if cj.flow.Workflow != nil {
		info.WorkflowDeadline = cj.flow.Workflow.RunDeadlineAt
	}
	return info
}

// maxAttempts is the effective attempt limit: __queuety_runtime first, then
// the row (Queuety's order), never more than the attempts column can count
// (MaxAttemptsLimit): a job allowed more would reach 255 and then fail
// every claim of its queue, since a claim adds one to attempts.
func (cj *Claimed) maxAttempts() int {
	if cj.runtime.MaxAttempts > 0 {
		return min(cj.runtime.MaxAttempts, MaxAttemptsLimit)
	}
	return min(max(cj.Job.MaxAttempts, 1), MaxAttemptsLimit)
}

// runNumber is the run of the step's workflow (0 for plain jobs).
func (cj *Claimed) runNumber() int {
	if cj.flow.Workflow == nil {
		return 0
	}
	return max(cj.flow.Workflow.RunNumber, 1)
}

// attemptID is the identity of one attempt: job id, attempt number and
// claim token.
func attemptID(j *driver.Job) string {
	return strconv.FormatInt(j.ID, 10) + "-" + strconv.Itoa(j.Attempts) + "-" + strconv.FormatInt(j.ClaimToken, 36)
}

// owns reports whether the stored row still belongs to the claimed attempt.
func (cj *Claimed) owns(row *driver.Job) bool {
	return row.Status == driver.JobProcessing && row.Attempts == cj.Job.Attempts && row.ClaimToken == cj.Job.ClaimToken
}

// newClaimToken returns a claim's base token: random, a multiple of 256
// (see driver.ClaimParams.Token).
func newClaimToken() int64 { return (rand.Int64N(1<<53) + 1) << 8 }

// Claim claims up to req.Limit due jobs in one transaction, queue by queue
// in the given order, and returns them ready to run. Jobs whose
// schedule-to-close or schedule-to-start deadline has already passed, and
// steps of workflows already past their deadline, are timed out or failed
// instead of being returned.
//
// Claims that workers of this engine make at the same time for the same
// queues and handlers, without limits, are combined into one transaction
// (see combine.go).
func (e *Engine) Claim(ctx context.Context, req ClaimRequest) ([]*Claimed, error) {
	if req.Limit <= 0 || len(req.Handlers) == 0 || len(req.Queues) == 0 {
		return nil, nil
	}
	if req.Admission == nil || req.Admission.Plain() {
		return e.claims.claim(ctx, e, req)
	}
	return e.claimOnce(ctx, req)
}

// claimOnce is one claim: its transaction and, when the values of a row
// made it fail (driver.ErrRowData), the search for that row, which is
// buried (see claimrows.go), and the claim again. Without it one such row
// would fail every claim of its queue, and with them the worker's other
// queues.
func (e *Engine) claimOnce(ctx context.Context, req ClaimRequest) ([]*Claimed, error) {
	out, err := e.claimTx(ctx, req)
	for round := 0; round < maxIsolationRounds && errors.Is(err, driver.ErrRowData) && ctx.Err() == nil; round++ {
		buried, ierr := e.buryUnclaimable(ctx, req)
		if ierr != nil {
			e.log.Error("queuety: a claim failed on a row's values and the row was not found", "err", ierr, "claim_err", err)
		}
		if buried == 0 {
			break
		}
		out, err = e.claimTx(ctx, req)
	}
	return out, err
}

// claimTx is one claim transaction, and what it leaves to do after it.
func (e *Engine) claimTx(ctx context.Context, req ClaimRequest) ([]*Claimed, error) {
	var out []*Claimed
	var expiredWorkflows []int64
	var failWorkflows []wfFailure
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		out, expiredWorkflows, failWorkflows, err = e.claimIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: claim: %w", err)
	}
	e.claimedDependents(out)
	for _, id := range uniqueIDs(expiredWorkflows) {
		if _, err := e.ExpireWorkflow(ctx, id); err != nil {
			e.log.Error("queuety: expire workflow found at claim", "workflow_id", id, "err", err)
		}
	}
	for _, f := range failWorkflows {
		if err := e.failWorkflow(ctx, f); err != nil {
			e.log.Error("queuety: fail workflow of job timed out at claim", "workflow_id", f.id, "err", err)
		}
	}
	return out, nil
}

// newClaimed wraps a claimed row with its decoded payload and runtime
// options; a payload that does not decode fails the attempt for good.
func newClaimed(j *driver.Job, now time.Time) *Claimed {
	cj := &Claimed{Job: j, ClaimedAt: now, prevS2S: j.ScheduleToStartAt, trace: steptrace.New()}
	doc, err := decodePayload(j.Payload)
	if err != nil {
		cj.preErr = NonRetryable(err)
		cj.payload = phpjson.NewObject()
	} else {
		cj.payload = doc
	}
	cj.runtime = jobruntime.Parse(cj.payload)
	return cj
}

// claimIn claims in tx: the jobs ready to run, the workflows found past
// their deadline and the workflows of jobs that timed out at the claim,
// which the caller expires and fails after tx.
func (e *Engine) claimIn(ctx context.Context, tx driver.Tx, req ClaimRequest) (out []*Claimed, expiredWorkflows []int64, failWorkflows []wfFailure, err error) {
	now := e.clock.Now()
	token := newClaimToken()
	jobs, err := e.claimJobs(ctx, tx, req, now, token)
	if err != nil || len(jobs) == 0 {
		return nil, nil, nil, err
	}
	var wfIDs []int64
	for _, j := range jobs {
		cj := newClaimed(j, now)
		if cj.IsStep() {
			wfIDs = append(wfIDs, j.WorkflowID)
		}
		out = append(out, cj)
	}
	wfs, err := workflowsByID(ctx, tx, wfIDs, driver.LockNone)
	if err != nil {
		return nil, nil, nil, err
	}
	attached := map[int64]*Claimed{} // claims of one workflow share its decoded state
	for _, cj := range out {
		if !cj.IsStep() {
			continue
		}
		if first := attached[cj.Job.WorkflowID]; first != nil && first.preErr == nil && first.flow.State != nil {
			e.shareWorkflow(cj, first)
			cj.public = first.public
			cj.public.users++
			continue
		}
		e.attachWorkflow(cj, wfs[cj.Job.WorkflowID])
		cj.public = &publicState{users: 1}
		attached[cj.Job.WorkflowID] = cj
	}
	kept := out[:0]
	for _, cj := range out {
		if cj.flow.Workflow != nil && cj.preErr == nil && workflowExpired(cj.flow.Workflow, now) != "" {
			expiredWorkflows = append(expiredWorkflows, cj.flow.Workflow.ID)
			continue
		}
		if kind, deadline := claimTimeout(cj.Job, now); kind != "" {
			// The claim itself is the attempt that timed out: it ends
			// here, in this transaction, instead of running.
			terr := &TimeoutError{Kind: kind, Deadline: deadline, Message: timeoutMessage(cj.Job, kind, deadline)}
			cj.Job.ClaimToken = 0
			buried, err := e.failAttempt(ctx, tx, cj, cj.Job, &Result{Claimed: cj, Err: terr}, terr)
			if err != nil {
				return nil, nil, nil, err
			}
			if buried && cj.Job.WorkflowID != 0 {
				failWorkflows = append(failWorkflows, wfFailure{id: cj.Job.WorkflowID, jobID: cj.Job.ID, msg: cj.Job.ErrorMessage})
			}
			continue
		}
		if err := e.armAttempt(ctx, tx, cj, now); err != nil {
			return nil, nil, nil, err
		}
		kept = append(kept, cj)
	}
	return kept, expiredWorkflows, failWorkflows, nil
}

// armAttempt sets the per-attempt deadlines on a freshly claimed job.
func (e *Engine) armAttempt(ctx context.Context, tx driver.Tx, cj *Claimed, now time.Time) error {
	j := cj.Job
	stc := cj.runtime.StartToClose()
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
func claimTimeout(j *driver.Job, now time.Time) (driver.TimeoutKind, time.Time) {
	if !j.ScheduleToCloseAt.IsZero() && !now.Before(j.ScheduleToCloseAt) {
		return driver.TimeoutScheduleToClose, j.ScheduleToCloseAt
	}
	if !j.ScheduleToStartAt.IsZero() && !now.Before(j.ScheduleToStartAt) {
		return driver.TimeoutScheduleToStart, j.ScheduleToStartAt
	}
	return "", time.Time{}
}

// decodePayload reads a stored job payload. A JSON object is the payload;
// a JSON list becomes an object keyed "0".."n-1", as in Queuety PHP. Any
// other value, and an empty column, is an error naming what was found:
// Queuety PHP would run the job with an empty payload, which hides the
// loss of its data.
func decodePayload(raw []byte) (*phpjson.Object, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("queuety: malformed payload JSON: empty (a payload is a JSON object)")
	}
	return workflowstate.DecodeObject("payload", raw)
}
