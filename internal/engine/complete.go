package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Result is the outcome of one attempt, reported by a worker.
type Result struct {
	Claimed   *Claimed
	Err       error // nil for success
	Output    State // a step's output; nil for plain jobs
	StartedAt time.Time
	Duration  time.Duration
	// Funcs finds the reducers and repeat conditions the engine calls while
	// it records a step; nil when the worker has none.
	Funcs Functions
	// Outcome is what recording the result did to the job: completed,
	// retried or buried. Finish, CompleteJobs and CompleteSteps set it
	// for each result they report no error for.
	Outcome observe.Outcome
	// Observed is the context the worker's observer returned for the
	// attempt (observe.Observer.JobStart), and Returned the wall-clock
	// time its handler returned; unset without an observer.
	Observed context.Context
	Returned time.Time
	// Notice is set by the engine once the transaction that recorded the
	// result has committed; it stays zero when nothing was recorded.
	Notice Notice
}

// Notice says what recording a result did to its job and workflow, for
// notifications (webhooks). The engine sets it for completed plain jobs and
// for failed attempts; a step's success leaves it zero.
type Notice struct {
	// Job is the job's new status: JobCompleted, JobPending (the attempt
	// failed and will be retried) or JobBuried; empty when unset.
	Job driver.JobStatus
	// ErrorMessage is the failure's message as stored and logged.
	ErrorMessage string
	// WorkflowFailed reports that burying the job failed its workflow.
	WorkflowFailed bool
}

// Finish records the outcome of one attempt: completion, retry, burial or,
// for a step, advancing the workflow. It returns ErrStaleAttempt when the
// attempt no longer owns its job.
func (e *Engine) Finish(ctx context.Context, r *Result) error {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	e.beforeRecord(ctx, r)
	err := e.finish(ctx, r)
	if err == nil {
		freedSlots(ctx, r)
	}
	e.afterRecord(ctx, r, err)
	return err
}

func (e *Engine) finish(ctx context.Context, r *Result) error {
	r.Outcome = ""
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
//
// Completions that workers of this engine record at the same time are
// combined into one transaction (see combine.go).
func (e *Engine) CompleteJobs(ctx context.Context, results []*Result) ([]error, error) {
	if len(results) == 0 {
		return nil, nil
	}
	ctx, woke := e.noteJobs(ctx) // a compensation's next job
	defer woke()
	errs, err := e.completions.complete(ctx, e, results)
	if err == nil {
		e.completedJobs(ctx, results, errs)
	}
	return errs, err
}

// completeJobsOnce is one completion transaction for CompleteJobs.
func (e *Engine) completeJobsOnce(ctx context.Context, results []*Result) ([]error, error) {
	errs := make([]error, len(results))
	if len(results) == 0 {
		return errs, nil
	}
	jobs := make([]*driver.Job, len(results))
	for i, r := range results {
		jobs[i] = r.Claimed.Job
		r.Outcome = ""
	}
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.clock.Now()
		if err := completeClaimed(ctx, tx, jobs, now); err != nil {
			return err
		}
		logs := make([]*driver.LogEntry, 0, 2*len(results))
		for _, r := range results {
			logs = append(logs, completedLogs(r, now)...)
		}
		if err := tx.LogInsert(ctx, logs); err != nil {
			return err
		}
		if err := e.batchJobsCompleted(ctx, tx, results, now); err != nil { // batch.go
			return err
		}
		return e.compensationsEnded(ctx, tx, results, now)
	})
	if errors.Is(err, errClaimMismatch) {
		return e.completeJobsChecked(ctx, results)
	}
	if err != nil {
		return nil, fmt.Errorf("queuety: complete jobs: %w", err)
	}
	setCompleted(results, errs)
	return errs, nil
}

// setCompleted records the outcome of the results recorded as completed.
func setCompleted(results []*Result, errs []error) {
	for i, r := range results {
		if errs[i] == nil {
			r.Notice = Notice{Job: driver.JobCompleted}
		}
	}
}

// compensationsEnded moves on the compensations whose jobs are among the
// completed results.
func (e *Engine) compensationsEnded(ctx context.Context, tx driver.Tx, results []*Result, now time.Time) error {
	for _, r := range results {
		if err := e.compensationEnded(ctx, tx, r.Claimed, "", now); err != nil {
			return err
		}
	}
	return nil
}

// errClaimMismatch rolls back a batch completion in which some row no
// longer matched its claim; the caller then checks the rows one by one.
var errClaimMismatch = errors.New("a completed row no longer matched its claim")

// completeClaimed completes jobs that are still processing under the claim
// token and attempt number each one was claimed with, with one guarded
// UPDATE per claim, and then tells the job note of ctx of them all at
// once (one dependents read, not one a claim). It returns
// errClaimMismatch when some row did not match.
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
	// The dependents of all the jobs are read once, with the last
	// completion (jobnote.Gather), not once a claim.
	gctx, dependents := jobnote.Gather(ctx)
	for _, k := range order {
		changed, err := tx.JobCompleteClaimed(gctx, groups[k], k.token, k.attempts, now)
		if err != nil {
			return err
		}
		if changed != int64(len(groups[k])) {
			return errClaimMismatch
		}
	}
	if err := dependents(); err != nil {
		return fmt.Errorf("completed jobs' dependents: %w", err)
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
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.clock.Now()
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
		if err := tx.LogInsert(ctx, logs); err != nil {
			return err
		}
		var owned []*Result
		for i, r := range results {
			if errs[i] == nil {
				owned = append(owned, r)
			}
		}
		if err := e.batchJobsCompleted(ctx, tx, owned, now); err != nil { // batch.go
			return err
		}
		return e.compensationsEnded(ctx, tx, owned, now)
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: complete jobs: %w", err)
	}
	setCompleted(results, errs)
	return errs, nil
}

// completedLogs are the 'started' and 'completed' rows of a successful
// plain-job attempt; it marks the result completed. Both rows and the
// values they point to are one allocation.
func completedLogs(r *Result, now time.Time) []*driver.LogEntry {
	r.Outcome = observe.OutcomeCompleted
	j := r.Claimed.Job
	c := &completedRows{id: j.ID, attempt: j.Attempts, duration: r.Duration.Milliseconds()}
	c.rows[0] = startedRow(r.Claimed, r.StartedAt, &c.id, &c.attempt)
	c.rows[1] = driver.LogEntry{JobID: &c.id, Handler: j.Handler, Queue: j.Queue, Event: driver.LogCompleted,
		Attempt: &c.attempt, DurationMS: &c.duration, CreatedAt: now}
	c.ptrs = [2]*driver.LogEntry{&c.rows[0], &c.rows[1]}
	return c.ptrs[:]
}

// completedRows backs the two rows completedLogs returns.
type completedRows struct {
	rows         [2]driver.LogEntry
	ptrs         [2]*driver.LogEntry
	id, duration int64
	attempt      int
}

// startedLog is the 'started' row of an attempt. The engine writes it with
// the attempt's outcome, stamped with the start time, so a job handed back
// unstarted leaves no trace.
func startedLog(cj *Claimed, startedAt time.Time) *driver.LogEntry {
	l := startedRow(cj, startedAt, ptr(cj.Job.ID), ptr(cj.Job.Attempts))
	return &l
}

// startedRow is startedLog with the job id and attempt it points to.
func startedRow(cj *Claimed, startedAt time.Time, id *int64, attempt *int) driver.LogEntry {
	j := cj.Job
	if startedAt.IsZero() {
		startedAt = cj.ClaimedAt
	}
	l := driver.LogEntry{JobID: id, Handler: j.Handler, Queue: j.Queue, Event: driver.LogStarted, Attempt: attempt, CreatedAt: startedAt}
	if cj.IsStep() {
		l.WorkflowID = j.WorkflowID
		l.StepIndex = ptr(*j.StepIndex)
	}
	return l
}

// CompleteSteps records successful step attempts. Single and delay steps
// of running (or paused) workflows whose attempt still owns its job are
// advanced together in one transaction: the workflows are locked in id
// order with one statement, each claim's jobs are completed with one
// guarded UPDATE, the workflows are written with one UPDATE, and the next
// jobs, events and log rows are inserted with one statement each.
// For-each branch results go into one transaction too, with the branches
// other workers of this engine record at the same time (see
// completeBranchGroups). Everything else (parallel branches, signal waits,
// continue-as-new, expired or stopped workflows, a fence that no longer
// holds) goes through Finish one by one, so every rule of a single step
// transition still applies. The returned slice holds, per result, nil,
// ErrStaleAttempt, or the error Finish returned.
func (e *Engine) CompleteSteps(ctx context.Context, results []*Result) ([]error, error) {
	errs, _, err := e.completeSteps(ctx, results, nil)
	return errs, err
}

func (e *Engine) completeSteps(ctx context.Context, results []*Result, offer *EagerOffer) (errs []error, handed []*Claimed, err error) {
	ctx, woke := e.noteJobs(ctx)
	defer woke()
	defer func() {
		if err == nil {
			for i, r := range results {
				if errs[i] == nil {
					freedSlots(ctx, r)
				}
			}
		}
	}()
	errs = make([]error, len(results))
	outputs := make([]*phpjson.Object, len(results))
	var batch, single []int
	branches := map[int64][]int{} // for-each branch results by workflow
	var branchOrder []int64
	for i, r := range results {
		e.beforeRecord(ctx, r)
		cj := r.Claimed
		r.Outcome = ""
		// r.Err covers failures and continue-as-new alike. A for_each
		// placeholder joins the branches: its expansion is batched too.
		if cj.IsStep() && r.Err == nil && cj.preErr == nil && cj.flow.Def != nil && cj.flow.Def.Type == queuetytype.StepForEach {
			if _, seen := branches[cj.Job.WorkflowID]; !seen {
				branchOrder = append(branchOrder, cj.Job.WorkflowID)
			}
			branches[cj.Job.WorkflowID] = append(branches[cj.Job.WorkflowID], i)
			continue
		}
		if !cj.IsStep() || r.Err != nil || cj.preErr != nil || cj.flow.Def == nil || (cj.flow.Def.Type != queuetytype.StepSingle && cj.flow.Def.Type != queuetytype.StepDelay) {
			single = append(single, i)
			continue
		}
		out := phpjson.NewObject()
		if cj.flow.Def.Type == queuetytype.StepSingle {
			var err error
			if out, err = stepOutput(r); err == nil {
				err = workflowstate.CheckNextStep(out, cj.flow.Steps)
			}
			if err != nil {
				single = append(single, i)
				continue
			}
		}
		outputs[i] = out
		batch = append(batch, i)
	}
	if len(batch) > 0 {
		individual, eager, err := e.completeStepBatch(ctx, results, outputs, batch, offer)
		if err != nil {
			return nil, nil, err
		}
		handed = eager
		single = append(single, individual...)
	}
	if len(branchOrder) > 0 {
		fallback, expanded, err := e.completeBranchGroups(ctx, results, branches, branchOrder, errs, offer.less(len(handed)))
		handed = append(handed, expanded...)
		if err != nil {
			return nil, handed, err
		}
		single = append(single, fallback...)
	}
	for _, i := range single {
		errs[i] = e.Finish(ctx, results[i])
	}
	for i, r := range results {
		e.afterRecord(ctx, r, errs[i])
	}
	return errs, handed, nil
}

// lockedState returns the state and steps of a step's workflow as just
// read under lock. When the row still holds the state the claim decoded,
// it copies that decoded state instead of decoding the row again (the
// claim's copy is shared and read-only; the step definitions are never
// changed).
func lockedState(cj *Claimed, wf *driver.Workflow) (*phpjson.Object, []*stepDef, []byte, error) {
	if cj.flow.Workflow != nil && cj.flow.State != nil && cj.flow.Steps != nil && bytes.Equal(wf.State, cj.flow.Workflow.State) {
		return transitionCopy(cj.flow.State), cj.flow.Steps, cj.flow.PublicJSON, nil
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return nil, nil, nil, err
	}
	steps, err := parseSteps(state)
	return state, steps, nil, err
}

// completeStepBatch advances the batch's workflows in one transaction and
// returns the results it left for Finish, and the next steps' jobs it
// handed off to the worker that made offer (see eager.go). It first tries
// advanceStepBatch, which needs no locking read.
func (e *Engine) completeStepBatch(ctx context.Context, results []*Result, outputs []*phpjson.Object, batch []int, offer *EagerOffer) ([]int, []*Claimed, error) {
	if individual, handed, ok, err := e.advanceStepBatch(ctx, results, outputs, batch, offer); ok || err != nil {
		return individual, handed, err
	}
	var individual []int
	var handed []*Claimed
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		individual, handed = individual[:0], nil
		now := e.clock.Now()
		ids := make([]int64, 0, len(batch))
		for _, i := range batch {
			ids = append(ids, results[i].Claimed.Job.WorkflowID)
		}
		byID, err := workflowsByID(ctx, tx, ids, driver.LockUpdate)
		if err != nil {
			return err
		}
		var items []stepItem
		taken := map[int64]bool{}
		for _, i := range batch {
			cj := results[i].Claimed
			wf := byID[cj.Job.WorkflowID]
			if wf == nil || taken[wf.ID] {
				individual = append(individual, i)
				continue
			}
			state, steps, public, err := lockedState(cj, wf)
			// A budget breach fails one workflow, not the batch.
			if err != nil || !batchable(cj, wf, state, steps, now) {
				individual = append(individual, i)
				continue
			}
			taken[wf.ID] = true
			items = append(items, stepItem{i: i, wf: wf, state: state, steps: steps, public: public})
		}
		if len(items) == 0 {
			return nil
		}
		handed, err = e.recordSteps(ctx, tx, results, outputs, items, offer, now, func(w *advance.Writes) error {
			return tx.WorkflowUpdateMany(ctx, w.Workflows())
		})
		return err
	})
	if errors.Is(err, errClaimMismatch) {
		return batch, nil, nil // let Finish sort out which attempts still own their jobs
	}
	if err != nil {
		return nil, nil, fmt.Errorf("queuety: complete steps: %w", err)
	}
	return individual, handed, nil
}
