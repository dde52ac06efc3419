package queuety

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
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
		// r.Err covers failures and continue-as-new alike.
		if !cj.IsStep() || r.Err != nil || cj.preErr != nil || cj.step == nil || (cj.step.Type != "single" && cj.step.Type != "delay") {
			single = append(single, i)
			continue
		}
		out := phpjson.NewObject()
		if cj.step.Type == "single" {
			var err error
			if out, err = stateObject("step output", r.Output); err == nil {
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
		wf    *driver.Workflow
		state *phpjson.Object
		steps []*stepDef
	}
	var individual []int
	err := e.c.store.InTx(ctx, func(tx driver.Tx) error {
		individual = individual[:0]
		now := e.c.clock.Now()
		ids := make([]int64, 0, len(batch))
		for _, i := range batch {
			ids = append(ids, results[i].Claimed.Job.WorkflowID)
		}
		byID, err := workflowsByID(ctx, tx, ids, driver.LockUpdate)
		if err != nil {
			return err
		}
		var items []item
		var jobs []*driver.Job
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
			jobs = append(jobs, cj.Job)
		}
		if len(items) == 0 {
			return nil
		}
		if err := completeClaimed(ctx, tx, jobs, now); err != nil {
			return err
		}
		w := &writes{}
		for _, it := range items {
			r := results[it.i]
			cj := r.Claimed
			sc := &stepCtx{e: e, tx: tx, wf: it.wf, row: cj.Job, state: it.state, steps: it.steps, step: it.steps[*cj.Job.StepIndex],
				cj: cj, r: r, now: now}
			if err := sc.finalizeInto(w, outputs[it.i]); err != nil {
				return err
			}
		}
		return w.flush(ctx, tx)
	})
	if errors.Is(err, errClaimMismatch) {
		return batch, nil // let Finish sort out which attempts still own their jobs
	}
	if err != nil {
		return nil, fmt.Errorf("queuety: complete steps: %w", err)
	}
	return individual, nil
}
