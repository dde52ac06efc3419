package advance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file runs Queuety's for_each steps. The step's placeholder job
// (__queuety_for_each) expands into one branch job per item of the state
// list under items_key; the runtime of the step lives in the workflow's
// private state, _for_each_steps[step index], exactly as Queuety keeps it:
//
//	{"initialized": true, "items": [...], "results": {index: entry},
//	 "failures": {index: entry}, "winner_index": n|null, "settled": bool}
//
// Every branch result is recorded under the workflow's row lock, so the
// step settles exactly once, by the branch whose result satisfies the mode
// (all, first_success or quorum); the branches still open are then buried
// ("For-each completion settled early."), and late results of settled
// steps are buried too.

// Messages Queuety writes for for-each outcomes.
const (
	msgForEachSettled       = "For-each step already settled."
	msgForEachSettledEarly  = "For-each completion settled early."
	msgForEachUnsatisfiable = "For-each completion condition could not be satisfied."
)

// forEachOutput is the settled step's output: the aggregate under the
// result key, plus the reducer's keys when the step has a reducer.
func (sc *stepCtx) forEachOutput(rt *workflowstate.ForEach) (*phpjson.Object, error) {
	key := sc.step.ForEachResultKey()
	agg := rt.Aggregate(sc.step)
	out := phpjson.NewObject()
	out.Set(key, agg)
	if sc.step.Reducer == "" {
		return out, nil
	}
	var fn ReducerFunc
	if funcs := sc.at.Funcs(); funcs != nil {
		fn, _ = funcs.Reducer(sc.step.Reducer)
	}
	if fn == nil {
		return nil, failAttemptWith(fmt.Errorf("For-each reducer class '%s' not found: no reducer of that name is registered with this worker", sc.step.Reducer))
	}
	view := workflowstate.PublicState(sc.state)
	view.Set(key, agg)
	reduced, err := callUser(func() (map[string]any, error) {
		return fn(context.Background(), view.ToMap(), workflowstate.DecodeForEachResult(agg))
	})
	if err != nil {
		return nil, failAttemptWith(fmt.Errorf("for-each reducer %s: %w", sc.step.Reducer, err))
	}
	ro, err := workflowstate.UserObject("reducer output", reduced)
	if err != nil {
		return nil, sc.s.final(fmt.Errorf("for-each reducer %s: %w", sc.step.Reducer, err))
	}
	for _, k := range ro.Keys() {
		v, _ := ro.Get(k)
		out.Set(k, v)
	}
	return out, nil
}

// callUser runs a user function, turning a panic into an error.
func callUser[T any](fn func() (T, error)) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// expandForEach runs a for_each placeholder job: it initialises the
// step's runtime from the items in state (once), then enqueues a branch job
// for every item that has neither a result nor a failure. When none is
// missing (a retried workflow whose branches all finished), the step
// settles or fails at once.
func (sc *stepCtx) expandForEach() error {
	ctx, tx := sc.ctx, sc.tx
	in := sc.inputs()
	all, rt, err := sc.loadExpand()
	if err != nil {
		return err
	}
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	if len(rt.Missing()) > 0 || (!rt.Satisfied(sc.step) && !rt.Impossible(sc.step)) {
		w := &Writes{}
		sc.expandInto(w, in, all, rt)
		return w.Flush(ctx, tx)
	}
	rt.Store(sc.state, all, sc.wf.CurrentStep)
	w := &Writes{events: []*driver.WorkflowEvent{sc.startedEvent(in)}, logs: sc.logs()}
	if rt.Satisfied(sc.step) {
		out, err := sc.forEachOutput(rt)
		if err != nil {
			return err
		}
		if err := sc.finalizeForEach(w, in, out); err != nil {
			return err
		}
		return w.Flush(ctx, tx)
	}
	if err := w.Flush(ctx, tx); err != nil {
		return err
	}
	sc.wf.State = workflowstate.EncodeJSON(sc.state)
	return sc.s.FailWorkflowLocked(ctx, tx, sc.wf, sc.row.ID, msgForEachUnsatisfiable, sc.now)
}

// loadExpand returns the step's for-each runtime, initialised from the
// items in state when the step has none yet. It changes nothing.
func (sc *stepCtx) loadExpand() (*phpjson.Object, *workflowstate.ForEach, error) {
	all, rt := workflowstate.LoadForEach(sc.state, sc.wf.CurrentStep)
	if rt != nil {
		return all, rt, nil
	}
	var items []any
	if sc.step.ItemsKey != "" {
		v, _ := sc.state.Get(sc.step.ItemsKey)
		if v != nil {
			var ok bool
			if items, ok = workflowstate.ListOf(v); !ok {
				return nil, nil, sc.s.final(fmt.Errorf("For-each step '%s' expected state key '%s' to contain an array.", sc.step.Name, sc.step.ItemsKey))
			}
		}
	}
	if items == nil {
		items = []any{}
	}
	if err := sc.checkForEachItems(len(items)); err != nil {
		return nil, nil, err
	}
	o := phpjson.NewObject()
	o.Set("initialized", true)
	o.Set("items", items)
	o.Set("results", phpjson.NewObject())
	o.Set("failures", phpjson.NewObject())
	o.Set("winner_index", nil)
	return all, &workflowstate.ForEach{Obj: o, Items: items, Results: phpjson.NewObject(), Failures: phpjson.NewObject()}, nil
}

// expandInto stores the runtime in the state and writes into w what the
// placeholder's expansion writes besides completing its job: the
// step_started event, the log rows, a branch job for every missing item
// and the workflow with its state.
func (sc *stepCtx) expandInto(w *Writes, in stepInputs, all *phpjson.Object, rt *workflowstate.ForEach) {
	idx := sc.wf.CurrentStep
	rt.Store(sc.state, all, idx)
	w.events = append(w.events, sc.startedEvent(in))
	w.logs = append(w.logs, sc.logs()...)
	var m *jobMaker
	for _, i := range rt.Missing() {
		if m == nil {
			// The branches' jobs differ only in their payload's item.
			m = sc.s.stepJobMaker(sc.wf, sc.state, sc.step.Raw, sc.step.Class, idx, 1, sc.now, -1)
		}
		meta := phpjson.NewObject()
		meta.Set("item_index", int64(i))
		meta.Set("item", rt.Items[i])
		p := phpjson.NewObject()
		p.Set(forEachKey, meta)
		j, doc := m.job(p)
		w.jobs = append(w.jobs, j)
		w.keepPayload(j, doc)
	}
	sc.wf.State = workflowstate.EncodeJSON(sc.state)
	w.workflows = append(w.workflows, sc.wf)
}

// checkForEachItems fails the step when it planned more items than the
// workflow's max_for_each_items budget allows or, without a budget, than
// the engine's default cap.
func (sc *stepCtx) checkForEachItems(n int) error {
	if limit := workflowstate.BudgetLimit(sc.state, "max_for_each_items"); limit > 0 {
		if int64(n) > limit {
			return sc.s.constraintf("For-each step '%s' planned %d items, exceeding max_for_each_items budget of %d.", sc.step.Name, n, limit)
		}
		return nil
	}
	if limit := sc.s.cfg.MaxForEachItems; limit > 0 && n > limit {
		return sc.s.constraintf("For-each step '%s' planned %d items, exceeding the default cap of %d for-each items; "+
			"set the workflow's MaxForEachItems budget to allow more.", sc.step.Name, n, limit)
	}
	return nil
}

// finalizeForEach settles the step with its output: the state merge, the
// transition and the next step, with the step_completed event.
func (sc *stepCtx) finalizeForEach(w *Writes, in stepInputs, output *phpjson.Object) error {
	workflowstate.MergeOutput(sc.state, output, sc.wf.CurrentStep)
	sc.s.pushCompensation(sc.state, sc.step, sc.wf.CurrentStep)
	if err := sc.s.countTransition(sc.state); err != nil {
		return err
	}
	ev := sc.completedEvent(driver.EventStepCompleted, in, output, sc.state)
	ev.Input = in.state
	w.events = append(w.events, ev)
	sc.s.advance(w, sc.wf, sc.state, sc.steps, sc.wf.CurrentStep+1, sc.now)
	return nil
}

// branchMeta is workflowstate.BranchMeta of the step's job: read from the
// payload its claim decoded when the locked row holds the payload
// claimed, instead of decoding the payload again.
func (sc *stepCtx) branchMeta() (item any, index int, ok bool) {
	if doc := sc.at.Payload(); doc != nil && bytes.Equal(sc.at.Job().Payload, sc.row.Payload) {
		return workflowstate.BranchMetaOf(doc)
	}
	return workflowstate.BranchMeta(sc.row)
}

// branchInputs is a for-each branch's step input for its events: the item
// and its index, as the input and as the context. Queuety also writes the
// public state into each branch event (as the input's "state", and as
// state_before and state_after); the Go engine leaves those out. The state
// holds the item list, so copying it into every branch's events made them
// grow with the square of the item count, and a branch leaves the public
// state as it was: the step-level events (the placeholder's step_started,
// the step_completed that settles the step) record it once. Queuety's
// readers accept the missing columns (its branch events are never read for
// state: workflow_state_at reads step_completed and workflow_resumed rows).
func (sc *stepCtx) branchInputs(item any, index int) (stepInputs, []byte) {
	enc := workflowstate.EncodeJSON(item)
	// {"item":<item>,"item_index":<index>}, the order of Queuety's context.
	var b []byte
	b = append(b, `{"item":`...)
	b = append(b, enc...)
	b = append(b, `,"item_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, '}')
	in := stepInputs{input: b, context: b}
	return in, b
}

// completeForEachBranch records one branch's result. The branch that
// satisfies the step's mode settles it: the open branches are buried, the
// aggregate (and the reducer's output) is merged, and the workflow moves
// on.
func (sc *stepCtx) completeForEachBranch(output *phpjson.Object) error {
	ctx, tx := sc.ctx, sc.tx
	idx := sc.wf.CurrentStep
	all, rt := workflowstate.LoadForEach(sc.state, idx)
	if rt == nil {
		return sc.s.final(fmt.Errorf("Workflow %d: for-each runtime state missing for step %d.", sc.wf.ID, idx))
	}
	if rt.Settled() {
		return sc.s.core.BuryJob(ctx, tx, sc.row, msgForEachSettled, sc.now)
	}
	w := &Writes{}
	_, satisfied, err := sc.applyBranch(w, rt, output)
	if err != nil {
		return err
	}
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	if satisfied {
		if err := sc.settleForEach(w, rt, all, nil); err != nil {
			return err
		}
		return w.Flush(ctx, tx)
	}
	rt.Store(sc.state, all, idx)
	if err := sc.s.checkBudget(sc.state); err != nil {
		return err
	}
	sc.wf.State = workflowstate.EncodeJSON(sc.state)
	w.workflows = append(w.workflows, sc.wf)
	return w.Flush(ctx, tx)
}

// applyBranch records one branch's output in the runtime, with its
// step_started and step_item_completed events and log rows, and returns
// the result entry it recorded (never changed afterwards) and whether
// the step's mode is now satisfied. The caller completes the job.
func (sc *stepCtx) applyBranch(w *Writes, rt *workflowstate.ForEach, output *phpjson.Object) (*phpjson.Object, bool, error) {
	storedItem, itemIndex, ok := sc.branchMeta()
	if !ok {
		return nil, false, sc.s.final(fmt.Errorf("Workflow %d: invalid for-each branch payload.", sc.wf.ID))
	}
	item := storedItem
	if itemIndex >= 0 && itemIndex < len(rt.Items) {
		item = rt.Items[itemIndex]
	}
	in, itemCtx := sc.branchInputs(item, itemIndex)
	entry := phpjson.NewObject()
	entry.Set("index", int64(itemIndex))
	entry.Set("item", item)
	entry.Set("output", output)
	entry.Set("job_id", sc.row.ID)
	rt.Results.Set(workflowstate.IntKey(itemIndex), entry)
	rt.Failures.Delete(workflowstate.IntKey(itemIndex))
	if v, _ := rt.Obj.Get("winner_index"); v == nil {
		rt.Obj.Set("winner_index", int64(itemIndex))
	}
	workflowstate.AddCostUnits(sc.state, sc.row.CostUnits)
	started := sc.startedEvent(in)
	started.Context = itemCtx
	done := sc.event(driver.EventStepItemCompleted, in)
	// No state_before or state_after (see branchInputs); Queuety writes
	// this event's context index first.
	done.Output, done.Artifacts = workflowstate.EncodeJSON(output), sc.at.Artifacts()
	doneCtx := phpjson.NewObject()
	doneCtx.Set("item_index", int64(itemIndex))
	doneCtx.Set("item", item)
	done.Context = workflowstate.EncodeJSON(doneCtx)
	sc.at.TraceItemCompleted(done, doneCtx)
	w.events = append(w.events, started, done)
	w.logs = append(w.logs, sc.logs()...)
	return entry, rt.Satisfied(sc.step), nil
}

// settleForEach settles the step on this branch: the branches still open
// are buried, and the aggregate (and the reducer's keys) is merged as the
// step's output. The settling branch's job must be completed already.
// open, when not nil, holds the workflow's pending and processing jobs,
// read and locked already (openJobsOf); else they are read here.
func (sc *stepCtx) settleForEach(w *Writes, rt *workflowstate.ForEach, all *phpjson.Object, open *openJobs) error {
	idx := sc.wf.CurrentStep
	rt.Obj.Set("settled", true)
	rt.Store(sc.state, all, idx)
	if open == nil {
		jobs, err := sc.tx.JobListByWorkflow(sc.ctx, sc.wf.ID, openStatuses, driver.LockUpdate)
		if err != nil {
			return err
		}
		open = &openJobs{jobs: jobs}
	}
	if err := sc.s.buryStepJobs(sc.ctx, sc.tx, open.jobs, idx, sc.row.ID, msgForEachSettledEarly, sc.now); err != nil {
		return err
	}
	out, err := sc.forEachOutput(rt)
	if err != nil {
		return err
	}
	before := workflowstate.EncodePublicJSON(sc.state)
	return sc.finalizeForEach(w, stepInputs{state: before, input: before}, out)
}

// errRollback rolls back a group transaction whose results go through
// the engine one by one instead.
var errRollback = errors.New("group handed to the one-by-one path")

// forEachBranchBuried records a buried branch job of a for-each step:
// the failure joins the step's runtime, and the workflow fails when the
// mode can no longer be satisfied (Queuety's
// handle_for_each_terminal_failure). handled is false when row is not a
// for-each branch, for the caller to fail the workflow as usual.
func (s *Service) forEachBranchBuried(ctx context.Context, tx driver.Tx, wf *driver.Workflow, row *driver.Job, msg string, now time.Time) (handled bool, err error) {
	if row.StepIndex == nil || row.Handler == handlerForEach {
		return false, nil
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return false, nil
	}
	steps, err := parseSteps(state)
	si := *row.StepIndex
	if err != nil || si < 0 || si >= len(steps) || steps[si].Type != queuetytype.StepForEach {
		return false, nil
	}
	if si != wf.CurrentStep || (wf.Status != driver.WorkflowRunning && wf.Status != driver.WorkflowPaused) {
		return true, nil
	}
	all, rt := workflowstate.LoadForEach(state, si)
	if rt == nil {
		o := phpjson.NewObject()
		o.Set("initialized", true)
		o.Set("items", []any{})
		o.Set("results", phpjson.NewObject())
		o.Set("failures", phpjson.NewObject())
		o.Set("winner_index", nil)
		rt = &workflowstate.ForEach{Obj: o, Items: []any{}, Results: phpjson.NewObject(), Failures: phpjson.NewObject()}
	}
	if item, index, ok := workflowstate.BranchMeta(row); ok {
		f := phpjson.NewObject()
		f.Set("index", int64(index))
		f.Set("item", item)
		f.Set("error_message", msg)
		f.Set("job_id", row.ID)
		rt.Failures.Set(workflowstate.IntKey(index), f)
		rt.Results.Delete(workflowstate.IntKey(index))
	}
	rt.Store(state, all, si)
	wf.State = workflowstate.EncodeJSON(state)
	if !rt.Impossible(steps[si]) {
		return true, tx.WorkflowUpdate(ctx, wf)
	}
	return true, s.FailWorkflowLocked(ctx, tx, wf, row.ID, msg, now)
}

// openStatuses are the statuses of a workflow's jobs still open.
var openStatuses = []driver.JobStatus{driver.JobPending, driver.JobProcessing}

// openJobs is a workflow's pending and processing jobs, locked.
type openJobs struct{ jobs []*driver.Job }

// openJobsOf reads and locks the pending and processing jobs of
// several workflows, by workflow: with one statement where the store can
// (driver.JobListManyTx), else one a workflow.
func openJobsOf(ctx context.Context, tx driver.Tx, wfIDs []int64) (map[int64]*openJobs, error) {
	var jobs []*driver.Job
	if many, ok := tx.(driver.JobListManyTx); ok {
		var err error
		if jobs, err = many.JobListByWorkflows(ctx, wfIDs, openStatuses, driver.LockUpdate); err != nil {
			return nil, err
		}
	} else {
		for _, id := range wfIDs {
			js, err := tx.JobListByWorkflow(ctx, id, openStatuses, driver.LockUpdate)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, js...)
		}
	}
	out := make(map[int64]*openJobs, len(wfIDs))
	for _, id := range wfIDs {
		out[id] = &openJobs{}
	}
	for _, j := range jobs {
		if o := out[j.WorkflowID]; o != nil {
			o.jobs = append(o.jobs, j)
		}
	}
	return out, nil
}

// buryStepJobs buries those of jobs, a workflow's open jobs, that belong
// to step idx, except one.
func (s *Service) buryStepJobs(ctx context.Context, tx driver.Tx, jobs []*driver.Job, idx int, except int64, msg string, now time.Time) error {
	for _, j := range jobs {
		if j.ID == except || j.StepIndex == nil || *j.StepIndex != idx {
			continue
		}
		if err := s.core.BuryJob(ctx, tx, j, msg, now); err != nil {
			return err
		}
	}
	return nil
}
