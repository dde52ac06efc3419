package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// errNeedLock rolls back a batch of step completions that advanceStepBatch
// cannot record without locking and reading the workflows first: the
// store has no guarded write, a transition needs the locked path, or a
// workflow row no longer holds what its claim read.
var errNeedLock = errors.New("a step batch needs its workflows locked and read")

// advanceStepBatch records a batch of completed single and delay steps
// without reading their workflows again: each transition is computed from
// the workflow row, decoded state and step definitions its claim read (or
// the completion that handed the step off wrote), and the workflows are
// written with one guarded UPDATE (driver.WorkflowAdvanceTx) that matches
// a row only while it still holds the status, current step and state the
// claim read, locking the rows in id order as the locking read does. The
// jobs are then completed, the next jobs, events and log rows inserted, as
// completeStepBatch does. ok is false, and nothing was written, when the
// batch needs completeStepBatch's locked path (see errNeedLock).
func (e *Engine) advanceStepBatch(ctx context.Context, results []*Result, outputs []*phpjson.Object, batch []int, offer *EagerOffer) (individual []int, handed []*Claimed, ok bool, err error) {
	seen := make(map[int64]bool, len(batch))
	for _, i := range batch {
		f := results[i].Claimed.flow
		if f.Workflow == nil || f.State == nil || f.Steps == nil || seen[f.Workflow.ID] {
			return nil, nil, false, nil
		}
		seen[f.Workflow.ID] = true
	}
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		adv, can := tx.(driver.WorkflowAdvanceTx)
		if !can {
			return errNeedLock
		}
		now := e.clock.Now()
		items := make([]stepItem, 0, len(batch))
		from := make(map[int64]*driver.Workflow, len(batch))
		for _, i := range batch {
			cj := results[i].Claimed
			read := cj.flow.Workflow
			if !batchable(cj, read, cj.flow.State, cj.flow.Steps, now) {
				return errNeedLock
			}
			wf := *read // the claim's copy is shared and read-only
			from[wf.ID] = read
			items = append(items, stepItem{i: i, wf: &wf, state: transitionCopy(cj.flow.State), steps: cj.flow.Steps, public: cj.flow.PublicJSON})
		}
		handed, err = e.recordSteps(ctx, tx, results, outputs, items, offer, now, func(w *advance.Writes) error {
			wfs := w.Workflows()
			advances := make([]driver.WorkflowAdvance, len(wfs))
			for k, wf := range wfs {
				read := from[wf.ID]
				advances[k] = driver.WorkflowAdvance{Workflow: wf, FromStatus: read.Status, FromStep: read.CurrentStep, FromState: read.State}
			}
			matched, err := adv.WorkflowAdvanceMany(ctx, advances)
			if err == nil && matched != int64(len(advances)) {
				err = errNeedLock
			}
			return err
		})
		return err
	})
	switch {
	case errors.Is(err, errNeedLock):
		return nil, nil, false, nil
	case errors.Is(err, errClaimMismatch):
		return batch, nil, true, nil // let Finish sort out which attempts still own their jobs
	case err != nil:
		return nil, nil, true, fmt.Errorf("queuety: complete steps: %w", err)
	}
	return nil, handed, true, nil
}

// stepItem is one completed step of a batch, with the workflow row, state
// and step definitions its transition starts from.
type stepItem struct {
	i     int
	wf    *driver.Workflow
	state *phpjson.Object
	steps []*stepDef
	// public is the encoded public state of state, when known (see
	// advance.Step.PublicJSON), else nil.
	public []byte
}

// transitionCopy returns the copy of a claim's read-only decoded state
// that a step transition changes: a copy of its top level. A transition
// sets and deletes top-level keys and replaces, never changes in place,
// the values it updates (the merged output's keys, _step_outputs,
// _compensation_stack, _workflow_counters), so the nested values can be
// shared with the claim's state.
func transitionCopy(state *phpjson.Object) *phpjson.Object { return state.Shallow() }

// batchable reports whether cj's completed step can be recorded in a
// batch from wf, state and steps: the workflow is running or paused, not
// expired, at the step, whose definition still has the claimed type, and
// its state carries no budget (a breach fails one workflow, not the
// batch).
func batchable(cj *Claimed, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, now time.Time) bool {
	idx := *cj.Job.StepIndex
	return workflowExpired(wf, now) == "" && (wf.Status == driver.WorkflowRunning || wf.Status == driver.WorkflowPaused) &&
		wf.CurrentStep == idx && idx < len(steps) && steps[idx].Type == cj.flow.Def.Type && !workflowstate.HasBudget(state)
}

// recordSteps records a batch of completed steps in tx: each item's
// transition, then the workflows written by writeWorkflows (an UPDATE of
// the locked rows, or a guarded one), the jobs completed, the next steps'
// jobs handed off to offer's worker, and the jobs, events and log rows
// inserted. It returns the handed-off jobs.
func (e *Engine) recordSteps(ctx context.Context, tx driver.Tx, results []*Result, outputs []*phpjson.Object, items []stepItem,
	offer *EagerOffer, now time.Time, writeWorkflows func(*advance.Writes) error) ([]*Claimed, error) {
	w := &advance.Writes{}
	eager := newEagerPicker(offer)
	jobs := make([]*driver.Job, 0, len(items))
	for _, it := range items {
		r := results[it.i]
		cj := r.Claimed
		queued := len(w.Jobs())
		l := locked(ctx, tx, it.wf, cj.Job, it.state, it.steps, now)
		l.PublicJSON = it.public
		if err := e.flow.FinalizeInto(w, l, attempt{cj, r}, outputs[it.i]); err != nil {
			return nil, err
		}
		eager.note(it.wf, it.state, it.steps, w.PublicStateAfter(), w.Jobs()[queued:], w.PayloadDoc)
		jobs = append(jobs, cj.Job)
	}
	if err := writeWorkflows(w); err != nil {
		return nil, err
	}
	if err := completeClaimed(ctx, tx, jobs, now); err != nil {
		return nil, err
	}
	handed, err := eager.claim(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	return handed, w.FlushRows(ctx, tx)
}
