package engine

import (
	"context"
	"errors"
	"fmt"

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
		handed = nil
		adv, can := tx.(driver.WorkflowAdvanceTx)
		if !can {
			return errNeedLock
		}
		now := e.clock.Now()
		w := &advance.Writes{}
		eager := newEagerPicker(offer)
		jobs := make([]*driver.Job, 0, len(batch))
		from := make(map[int64]*driver.Workflow, len(batch))
		for _, i := range batch {
			r := results[i]
			cj := r.Claimed
			read := cj.flow.Workflow
			idx := *cj.Job.StepIndex
			steps := cj.flow.Steps
			if workflowExpired(read, now) != "" || (read.Status != driver.WorkflowRunning && read.Status != driver.WorkflowPaused) ||
				read.CurrentStep != idx || idx >= len(steps) || steps[idx].Type != cj.flow.Def.Type || workflowstate.HasBudget(cj.flow.State) {
				return errNeedLock
			}
			wf := *read // the claim's copy is shared and read-only
			state := cj.flow.State.Clone()
			from[wf.ID] = read
			queued := len(w.Jobs())
			if err := e.flow.FinalizeInto(w, locked(tx, &wf, cj.Job, state, steps, now), attempt{cj, r}, outputs[i]); err != nil {
				return err
			}
			eager.note(&wf, state, steps, w.Jobs()[queued:])
			jobs = append(jobs, cj.Job)
		}
		wfs := w.Workflows()
		advances := make([]driver.WorkflowAdvance, len(wfs))
		for k, wf := range wfs {
			read := from[wf.ID]
			advances[k] = driver.WorkflowAdvance{Workflow: wf, FromStatus: read.Status, FromStep: read.CurrentStep, FromState: read.State}
		}
		matched, err := adv.WorkflowAdvanceMany(ctx, advances)
		if err != nil {
			return err
		}
		if matched != int64(len(advances)) {
			return errNeedLock
		}
		if err := completeClaimed(ctx, tx, jobs, now); err != nil {
			return err
		}
		if handed, err = eager.claim(ctx, tx, now); err != nil {
			return err
		}
		return w.FlushRows(ctx, tx)
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
