package queuety

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// CompleteSteps records successful step attempts. Single and delay steps
// of running (or paused) workflows whose attempt still owns its job are
// advanced together in one transaction: the workflows are locked in id
// order with one statement, each claim's jobs are completed with one
// guarded UPDATE, and the next jobs, events and log rows are inserted with
// one statement each. Everything else (parallel branches, signal waits,
// continue-as-new, expired or stopped workflows, a fence that no longer
// holds) goes through Finish one by one, so every rule of a single step
// transition still applies. The returned slice holds, per result, nil,
// ErrStaleAttempt, or the error Finish returned.
func (e *Engine) CompleteSteps(ctx context.Context, results []*Result) ([]error, error) {
	errs := make([]error, len(results))
	outputs := make([]*phpjson.Object, len(results))
	var batch, single []int
	for i, r := range results {
		cj := r.Claimed
		_, can := asContinueAsNew(r.Err)
		if !cj.IsStep() || r.Err != nil || can || cj.preErr != nil || cj.step == nil || (cj.step.Type != "single" && cj.step.Type != "delay") {
			single = append(single, i)
			continue
		}
		out := phpjson.NewObject()
		if cj.step.Type == "single" {
			var err error
			if out, err = stepOutput(r.Output); err == nil {
				err = checkNextStep(out, cj.steps)
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
		individual, err := e.completeStepBatch(ctx, results, outputs, batch)
		if err != nil {
			return nil, err
		}
		single = append(single, individual...)
	}
	for _, i := range single {
		errs[i] = e.Finish(ctx, results[i])
	}
	return errs, nil
}

// completeStepBatch advances the batch's workflows in one transaction and
// returns the results it left for Finish.
func (e *Engine) completeStepBatch(ctx context.Context, results []*Result, outputs []*phpjson.Object, batch []int) ([]int, error) {
	type item struct {
		i     int
		wf    *Workflow
		state *phpjson.Object
		steps []*stepDef
	}
	errMismatch := errors.New("a step job no longer matched its claim")
	var individual []int
	err := e.c.store.InTx(ctx, func(tx Tx) error {
		individual = individual[:0]
		now := e.c.clock.Now()
		ids := make([]int64, 0, len(batch))
		for _, i := range batch {
			ids = append(ids, results[i].Claimed.Job.WorkflowID)
		}
		wfs, err := tx.WorkflowGetMany(ctx, uniqueIDs(ids), LockUpdate)
		if err != nil {
			return err
		}
		byID := make(map[int64]*Workflow, len(wfs))
		for _, wf := range wfs {
			byID[wf.ID] = wf
		}
		var items []item
		taken := map[int64]bool{}
		for _, i := range batch {
			cj := results[i].Claimed
			wf := byID[cj.Job.WorkflowID]
			idx := *cj.Job.StepIndex
			if wf == nil || taken[wf.ID] || workflowExpired(wf, now) != "" ||
				(wf.Status != WorkflowRunning && wf.Status != WorkflowPaused) || wf.CurrentStep != idx {
				individual = append(individual, i)
				continue
			}
			state, err := decodeObject("workflow state", wf.State)
			if err != nil {
				individual = append(individual, i)
				continue
			}
			steps, err := parseSteps(state)
			if err != nil || idx >= len(steps) || steps[idx].Type != cj.step.Type {
				individual = append(individual, i)
				continue
			}
			taken[wf.ID] = true
			items = append(items, item{i: i, wf: wf, state: state, steps: steps})
		}
		if len(items) == 0 {
			return nil
		}
		type claim struct {
			token    int64
			attempts int
		}
		groups := map[claim][]int64{}
		var order []claim
		for _, it := range items {
			j := results[it.i].Claimed.Job
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
				return errMismatch
			}
		}
		w := &writes{}
		for _, it := range items {
			r := results[it.i]
			cj := r.Claimed
			sc := &stepCtx{e: e, tx: tx, wf: it.wf, row: cj.Job, state: it.state, steps: it.steps, step: it.steps[*cj.Job.StepIndex],
				cj: cj, r: r, now: now}
			if err := sc.finalizeInto(w, outputs[it.i], true); err != nil {
				return err
			}
		}
		return w.flush(ctx, tx)
	})
	if errors.Is(err, errMismatch) {
		return batch, nil // let Finish sort out which attempts still own their jobs
	}
	if err != nil {
		return nil, fmt.Errorf("queuety: complete steps: %w", err)
	}
	return individual, nil
}
