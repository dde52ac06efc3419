package advance

// This file runs the Go compensations and cancel callbacks of workflows
// that Queuety PHP failed or cancelled.
//
// Queuety PHP runs a workflow's compensations and its on_cancel handler
// in-process, and only those that are PHP classes: it skips every other
// name (a Go handler), and still writes _compensated and
// _compensation_cause. The Go engine marks every workflow it fails or
// cancels in its workflow ends table, in the transaction that ends it. So
// a failed or cancelled workflow without a mark was ended by another
// engine, and a Go sweep (internal/sweep's ForeignEnds) takes it, under its row lock:
//
//   - it waits until PHP recorded the compensations' end (_compensated;
//     PHP writes it right after the end, in a second statement), or, for a
//     failure without _compensate_on_failure, not at all;
//   - only Queuety PHP knows which names it ran (a Go handler may share a
//     PHP class's name, as Go twins of PHP classes do), so the sweep hands
//     the workflow to the PHP bridge class (kind "ended"). The bridge
//     lists, newest first, the entries whose handler is not a class there,
//     and the on_cancel handler likewise, and enqueues the first as the
//     job Go enqueues for a Go handler, with _compensation_next and the
//     rest of the list in its marker (sweepPlan);
//   - Go workers run the chain on, one job at a time, newest first
//     (sweptCompensationEnded), and the cancel callback after the last;
//   - the mark (EndedElsewhere) makes each run once however many Go
//     sweepers look; a workflow with no names is marked EndedNothingToRun.
//
// Without a PHP workflow callback queue the sweep does nothing.

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// ForeignEndLookback is how far back in failed_at and completed_at a Go
// sweeper looks for workflows another engine failed or cancelled.
const ForeignEndLookback = 24 * time.Hour

// sweepPlan is what is left of a compensation chain the sweep started:
// the stack indexes still to run, newest first, and whether the cancel
// callback runs after them.
type sweepPlan struct {
	rest   []int64
	cancel bool
}

func (p *sweepPlan) encode(marker *phpjson.Object) {
	rest := make([]any, len(p.rest))
	for i, v := range p.rest {
		rest[i] = v
	}
	marker.Set("plan", rest)
	marker.Set("then_cancel", p.cancel)
}

// sweepPlanOf returns the plan in a compensation job's marker (payload
// is the job's), if the sweep started its chain.
func sweepPlanOf(payload *phpjson.Object) (sweepPlan, bool) {
	if payload == nil {
		return sweepPlan{}, false
	}
	m, ok := mustObject(payload, callbackKey)
	if !ok {
		return sweepPlan{}, false
	}
	raw, ok := m.Get("plan")
	if !ok {
		return sweepPlan{}, false
	}
	list, _ := workflowstate.ListOf(raw)
	p := sweepPlan{cancel: workflowstate.Truthy(m, "then_cancel")}
	for _, v := range list {
		p.rest = append(p.rest, workflowstate.ToInt(v))
	}
	return p, true
}

// sweptCompensationEnded moves a chain the sweep started on: the next
// index of the plan, or the end (the cancel callback, if planned). The
// state keeps the _compensated and _compensation_cause PHP wrote.
func (s *Service) sweptCompensationEnded(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, plan sweepPlan, reason string, now time.Time) error {
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	for len(plan.rest) > 0 {
		next := int(plan.rest[0])
		plan.rest = plan.rest[1:]
		if next < 0 || next >= len(stack) {
			continue
		}
		entry, _ := stack[next].(*phpjson.Object)
		if entry == nil || strField(entry, "handler") == "" {
			continue
		}
		state.Set("_compensation_next", int64(next))
		wf.State = workflowstate.EncodeJSON(state)
		if err := tx.WorkflowUpdate(ctx, wf); err != nil {
			return err
		}
		return tx.JobInsert(ctx, []*driver.Job{compensationJob(wf, state, entry, next, reason, &plan, now)})
	}
	state.Delete("_compensation_next")
	wf.State = workflowstate.EncodeJSON(state)
	if err := tx.WorkflowUpdate(ctx, wf); err != nil {
		return err
	}
	if handler := handlerRef(state, "_on_cancel"); plan.cancel && handler != "" {
		return tx.JobInsert(ctx, []*driver.Job{s.callbackJob(wf, state, "_on_cancel", "cancel", handler, now)})
	}
	return nil
}

// TakeForeignEndLocked handles wf, locked by the caller, a workflow that
// another engine (Queuety PHP) failed or cancelled: if it names
// compensation or cancel handlers, it enqueues one job for Queuety PHP's
// bridge class, which starts the chain of the names that are not PHP
// classes there (see the file comment), once; otherwise it marks it. It
// reports whether it enqueued a bridge job.
func (s *Service) TakeForeignEndLocked(ctx context.Context, tx driver.Tx, wf *driver.Workflow, now time.Time) (bool, error) {
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		state = phpjson.NewObject()
	}
	ended := wf.FailedAt
	cancelled := wf.Status == driver.WorkflowCancelled
	if cancelled {
		ended = wf.CompletedAt
	}
	_, running := state.Get("_compensation_next")
	compensated := workflowstate.Truthy(state, "_compensated") && !running
	settled := compensated || (!cancelled && !workflowstate.Truthy(state, "_compensate_on_failure") && !running)
	names := 0
	if compensated {
		raw, _ := state.Get("_compensation_stack")
		stack, _ := workflowstate.ListOf(raw)
		for _, v := range stack {
			if entry, _ := v.(*phpjson.Object); entry != nil && strField(entry, "handler") != "" {
				names++
			}
		}
	}
	if cancelled && handlerRef(state, "_on_cancel") != "" {
		names++
	}
	if !settled {
		if handoff := s.cfg.DeadlineHandoff; handoff > 0 && now.Before(ended.Add(handoff)) {
			s.skipEnd(wf.ID, ended.Add(handoff))
			return false, nil
		}
		s.log.Warn("queuety: workflow ended elsewhere without recording its compensations; its Go compensations are left",
			"workflow_id", wf.ID, "status", string(wf.Status))
		names = 0
	}
	if names == 0 {
		_, err := tx.WorkflowEndMark(ctx, wf.ID, driver.EndedNothingToRun, now)
		return false, err
	}
	if marked, err := tx.WorkflowEndMark(ctx, wf.ID, driver.EndedElsewhere, now); err != nil || !marked {
		return false, err // a sweeper that committed after the find's snapshot took it
	}
	return true, tx.JobInsert(ctx, []*driver.Job{s.phpWorkflowCallbackJob(wf, "ended", "", 0, "", now)})
}

// ForeignEndSkips returns the workflows the foreign end sweep moves past
// for now, dropping those whose skip ended.
func (s *Service) ForeignEndSkips(now time.Time) []int64 {
	s.skips.mu.Lock()
	defer s.skips.mu.Unlock()
	var ids []int64
	for id, until := range s.skips.ends {
		if !now.Before(until) {
			delete(s.skips.ends, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// skipEnd makes the foreign end sweep move past a workflow until the
// given time (its end plus the deadline handoff).
func (s *Service) skipEnd(id int64, until time.Time) {
	s.skips.mu.Lock()
	defer s.skips.mu.Unlock()
	if s.skips.ends == nil {
		s.skips.ends = map[int64]time.Time{}
	}
	s.skips.ends[id] = until
}
