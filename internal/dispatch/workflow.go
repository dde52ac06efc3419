package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// DispatchWorkflow starts a workflow from its runtime definition (see
// Definition) and initial state, which it takes over (private keys are
// added to it). In one transaction it writes the workflow
// row, the first step's job(s) and the workflow_started log, all in
// Queuety's format. With an idempotency key that was used before, it
// returns the existing workflow's id and writes nothing.
func (s *Service) DispatchWorkflow(ctx context.Context, def Definition, initial *phpjson.Object) (int64, error) {
	obs := s.cfg.Observer
	var d observe.Dispatch
	if obs != nil {
		d = observe.Dispatch{Kind: observe.DispatchWorkflow, Name: def.Name, Queue: orDefault(def.Queue, queuetytype.DefaultQueue)}
		ctx = obs.DispatchStart(ctx, d)
	}
	nctx, woke := s.cfg.NoteJobs(ctx)
	id, existing, err := s.dispatchWorkflow(nctx, def, initial)
	if err == nil && !existing {
		woke()
	}
	if obs != nil {
		obs.DispatchEnd(ctx, d, observe.Dispatched{ID: id, Existing: existing, Err: err})
	}
	return id, err
}

func (s *Service) dispatchWorkflow(ctx context.Context, def Definition, initial *phpjson.Object) (int64, bool, error) {
	p, err := Prepare(def, initial)
	if err != nil {
		return 0, false, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	var id int64
	for range 3 {
		err = s.store.InTx(ctx, func(tx driver.Tx) (err error) {
			id, err = s.InsertWorkflow(ctx, tx, p, s.cfg.Clock.Now())
			return err
		})
		if errors.Is(err, driver.ErrDuplicate) && p.def.IdempotencyKey != "" {
			continue // a concurrent dispatch won the key: read it on the next pass
		}
		break
	}
	if err != nil {
		return 0, false, fmt.Errorf("queuety: dispatch workflow %q: %w", p.def.Name, err)
	}
	return id, p.existing, nil
}

// DispatchWorkflowIn starts a workflow inside tx, a transaction the caller
// owns, writing what DispatchWorkflow writes. With an idempotency key used
// before it returns the existing workflow's id and writes nothing. When
// another transaction stores the same key first, it returns an error
// wrapping driver.ErrDuplicate and the caller must roll back.
func (s *Service) DispatchWorkflowIn(ctx context.Context, tx driver.Tx, def Definition, initial *phpjson.Object) (int64, error) {
	p, err := Prepare(def, initial)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	id, err := s.InsertWorkflow(ctx, tx, p, s.cfg.Clock.Now())
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q in transaction: %w", def.Name, err)
	}
	return id, nil
}

// Prepared is a definition with its initial state encoded, ready to
// insert with Service.InsertWorkflow.
type Prepared struct {
	def       Definition
	state     *phpjson.Object
	stateJSON []byte
	steps     []*workflowdef.Step
	queue     string
	// existing is set by InsertWorkflow when the idempotency key named
	// a workflow that already existed, so nothing was written.
	existing bool
}

// Prepare builds the stored state: the initial keys, then Queuety's
// private keys in Queuety's order (WorkflowBuilder::dispatch's, or
// dispatch_defined_workflow's with RuntimeOrder). It adds those keys to
// state in place: callers hand over an object of their own.
func Prepare(def Definition, state *phpjson.Object) (*Prepared, error) {
	for _, k := range state.Keys() {
		if workflowstate.IsPrivateKey(k) {
			return nil, invalidf("initial state key %q starts with _, which is reserved", k)
		}
	}
	if err := def.checkBudgets(); err != nil {
		return nil, err
	}
	if def.MaxStateBytes > 0 {
		if n := len(workflowstate.EncodeJSON(state)); n > def.MaxStateBytes {
			return nil, invalidf("Workflow initial state exceeds configured max_state_bytes budget of %d (it is %d bytes).", def.MaxStateBytes, n)
		}
	}
	queue := orDefault(def.Queue, queuetytype.DefaultQueue)
	maxAttempts := min(orDefaultInt(def.MaxAttempts, queuetytype.DefaultMaxAttempts), queuetytype.MaxAttemptsLimit)

	state.Set("_steps", def.Steps)
	state.Set("_queue", queue)
	state.Set("_priority", int64(def.Priority))
	state.Set("_max_attempts", int64(maxAttempts))
	if def.RuntimeOrder {
		setRuntimeOrderKeys(def, state)
	} else {
		setBuilderOrderKeys(def, state)
	}
	if def.RunTimeoutSecs > 0 {
		state.Set(workflowstate.RunTimeoutKey, def.RunTimeoutSecs)
	}
	stateJSON, err := phpjson.Marshal(state)
	if err != nil {
		return nil, invalidf("state does not encode as JSON: %v", err)
	}
	parsed, err := workflowdef.Parse(state)
	if err != nil {
		return nil, err
	}
	return &Prepared{def: def, state: state, stateJSON: stateJSON, steps: parsed, queue: queue}, nil
}

// setBuilderOrderKeys writes the private keys after _max_attempts in the
// order WorkflowBuilder::dispatch writes them.
func setBuilderOrderKeys(def Definition, state *phpjson.Object) {
	state.Set("_definition_hash", orDefault(def.Hash, def.hash()))
	if def.OnCancel != "" {
		state.Set("_on_cancel", def.OnCancel)
	}
	setPruneKeys(def, state)
	if def.DeadlineSecs > 0 {
		state.Set("_deadline_seconds", def.DeadlineSecs)
	}
	if def.OnDeadline != "" {
		state.Set("_on_deadline", def.OnDeadline)
	}
	if def.Version != "" {
		state.Set("_definition_version", def.Version)
	}
	if def.IdempotencyKey != "" {
		state.Set("_idempotency_key", def.IdempotencyKey)
	}
	setBudgetKeys(def, state)
}

// setRuntimeOrderKeys writes the private keys after _max_attempts in the
// order Queuety's materialize_defined_workflow_state writes them, with
// callbacks in its {class, payload} form.
func setRuntimeOrderKeys(def Definition, state *phpjson.Object) {
	if def.OnCancel != "" {
		state.Set("_on_cancel", HandlerDefinition(def.OnCancel))
	}
	setPruneKeys(def, state)
	if def.DeadlineSecs > 0 {
		state.Set("_deadline_seconds", def.DeadlineSecs)
	}
	if def.OnDeadline != "" {
		state.Set("_on_deadline", HandlerDefinition(def.OnDeadline))
	}
	if def.Version != "" {
		state.Set("_definition_version", def.Version)
	}
	if def.Hash != "" {
		state.Set("_definition_hash", def.Hash)
	}
	setBudgetKeys(def, state)
	if def.IdempotencyKey != "" {
		state.Set("_idempotency_key", def.IdempotencyKey)
	}
	if def.StartedByWorkflowID > 0 {
		state.Set("_started_by_workflow_id", def.StartedByWorkflowID)
		state.Set("_started_by_step_index", int64(def.StartedByStepIndex))
	}
}

// setPruneKeys writes _prune_state_after and an empty _step_outputs when
// the workflow prunes its state.
func setPruneKeys(def Definition, state *phpjson.Object) {
	if def.PruneAfter > 0 {
		state.Set("_prune_state_after", int64(def.PruneAfter))
		state.Set("_step_outputs", []any{})
	}
}

// setBudgetKeys writes _workflow_budget and fresh _workflow_counters when
// any budget is set, then _compensate_on_failure (both of Queuety's
// orders keep these together).
func setBudgetKeys(def Definition, state *phpjson.Object) {
	if budget := def.budgetObject(); budget.Len() > 0 {
		counters := phpjson.NewObject()
		counters.Set("transitions", int64(0))
		counters.Set("cost_units", int64(0))
		counters.Set("started_workflows", int64(0))
		state.Set("_workflow_budget", budget)
		state.Set("_workflow_counters", counters)
	}
	if def.CompensateOnFailure {
		state.Set("_compensate_on_failure", true)
	}
}

// HandlerDefinition is Queuety's stored form of a callback handler:
// {"class": class, "payload": []}.
func HandlerDefinition(class string) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("class", class)
	o.Set("payload", []any{})
	return o
}

// InsertWorkflow writes a prepared workflow inside tx: the workflow row,
// its idempotency key, the first step's job(s) (through
// Config.EnqueueStep) and the workflow_started log. With a known
// idempotency key it returns the existing id and writes nothing; a key
// inserted concurrently surfaces as driver.ErrDuplicate.
func (s *Service) InsertWorkflow(ctx context.Context, tx driver.Tx, p *Prepared, now time.Time) (int64, error) {
	def := p.def
	if def.IdempotencyKey != "" {
		existing, err := tx.DispatchKeyGet(ctx, def.IdempotencyKey)
		p.existing = existing != 0
		if err != nil || existing != 0 {
			return existing, err
		}
	}
	wf := &driver.Workflow{
		Name: def.Name, Status: driver.WorkflowRunning, State: p.stateJSON, TotalSteps: len(p.steps),
		StartedAt: rowtime.Floor(now), RunNumber: 1, RunStartedAt: now,
	}
	if def.ParentWorkflowID > 0 {
		idx := def.ParentStepIndex
		wf.ParentWorkflowID, wf.ParentStepIndex = def.ParentWorkflowID, &idx
	}
	if def.DeadlineSecs > 0 {
		wf.DeadlineAt = rowtime.Ceil(now).Add(time.Duration(def.DeadlineSecs) * time.Second)
	}
	StartRun(wf, p.state, now)
	if err := tx.WorkflowInsert(ctx, wf); err != nil {
		return 0, err
	}
	if def.IdempotencyKey != "" {
		if err := tx.DispatchKeyInsert(ctx, def.IdempotencyKey, wf.ID, now); err != nil {
			return 0, err
		}
	}
	if err := s.cfg.EnqueueStep(ctx, tx, wf, p.state, p.steps, 0, now); err != nil {
		return 0, err
	}
	err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: def.Name, Queue: p.queue, Event: driver.LogWorkflowStarted, CreatedAt: now}})
	return wf.ID, err
}

// StartRun starts a run's clock: run start + run timeout (the state's
// run timeout key), capped at the execution deadline.
func StartRun(wf *driver.Workflow, state *phpjson.Object, now time.Time) {
	wf.RunStartedAt = now
	wf.RunDeadlineAt = time.Time{}
	secs := workflowdef.Int(state, workflowstate.RunTimeoutKey)
	if secs <= 0 {
		return
	}
	d := now.Add(time.Duration(secs) * time.Second)
	if !wf.DeadlineAt.IsZero() && wf.DeadlineAt.Before(d) {
		d = wf.DeadlineAt
	}
	wf.RunDeadlineAt = d
}
