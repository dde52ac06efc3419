package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// DispatchWorkflow starts a workflow from its runtime definition (see
// Definition) and initial state, which it takes over (private keys are
// added to it). In one transaction it writes the workflow
// row, the first step's job(s) and the workflow_started log, all in
// Queuety's format. With an idempotency key that was used before, it
// returns the existing workflow's id and writes nothing.
func (e *Engine) DispatchWorkflow(ctx context.Context, def Definition, initial *phpjson.Object) (int64, error) {
	var d observe.Dispatch
	if e.obs != nil {
		d = observe.Dispatch{Kind: observe.DispatchWorkflow, Name: def.Name, Queue: orDefault(def.Queue, DefaultQueue)}
		ctx = e.obs.DispatchStart(ctx, d)
	}
	id, existing, err := e.dispatchWorkflow(ctx, def, initial)
	if err == nil && !existing {
		e.wake()
	}
	if e.obs != nil {
		e.obs.DispatchEnd(ctx, d, observe.Dispatched{ID: id, Existing: existing, Err: err})
	}
	return id, err
}

func (e *Engine) dispatchWorkflow(ctx context.Context, def Definition, initial *phpjson.Object) (int64, bool, error) {
	p, err := prepareWorkflow(def, initial)
	if err != nil {
		return 0, false, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	var id int64
	for range 3 {
		err = e.store.InTx(ctx, func(tx driver.Tx) (err error) {
			id, err = e.insertWorkflow(ctx, tx, p, e.clock.Now())
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

// Definition is a workflow definition in the engine's terms: the header
// fields of Queuety's runtime definition and the encoded _steps entries.
// Package queuety validates a WorkflowDefinition and encodes it into one;
// DefinitionFromRuntime reads one from a runtime definition.
type Definition struct {
	Name           string
	Steps          []any // encoded _steps entries (*phpjson.Object)
	Queue          string
	Priority       driver.Priority
	MaxAttempts    int
	OnCancel       string
	OnDeadline     string
	DeadlineSecs   int64 // execution timeout in whole seconds; 0 for none
	RunTimeoutSecs int64 // run timeout in whole seconds; 0 for none
	Version        string
	IdempotencyKey string

	// Queuety's workflow budgets (workflow_budget); 0 means none.
	MaxTransitions      int
	MaxForEachItems     int
	MaxStateBytes       int
	MaxCostUnits        int
	MaxStartedWorkflows int
	// PruneAfter is Queuety's prune_after (prune_state_after); 0 for none.
	PruneAfter int
	// CompensateOnFailure is Queuety's compensate_on_failure.
	CompensateOnFailure bool

	// Hash is the definition hash to store as _definition_hash. Empty
	// computes it, except with RuntimeOrder, where Queuety stores none.
	Hash string
	// RuntimeOrder writes the private state keys the way Queuety's
	// dispatch_defined_workflow does (children of run_workflow and
	// start_workflows steps) instead of the way WorkflowBuilder::dispatch
	// does. DefinitionFromRuntime sets it.
	RuntimeOrder bool
	// ParentWorkflowID and ParentStepIndex link a run_workflow child to
	// the step that started it (the parent_workflow_id and
	// parent_step_index columns); zero for none.
	ParentWorkflowID int64
	ParentStepIndex  int
	// StartedByWorkflowID and StartedByStepIndex record the
	// start_workflows step that started a workflow
	// (_started_by_workflow_id, _started_by_step_index); zero for none.
	StartedByWorkflowID int64
	StartedByStepIndex  int
}

// Encode writes d in Queuety's runtime definition shape
// (build_runtime_definition, see RuntimeObject), plus the Go engine's keys,
// which Queuety PHP ignores. Stored workflow schedules hold this object.
func (d Definition) Encode() *phpjson.Object {
	o := d.RuntimeObject()
	if d.RunTimeoutSecs > 0 {
		o.Set("run_timeout_seconds", d.RunTimeoutSecs)
	}
	if d.IdempotencyKey != "" {
		o.Set("idempotency_key", d.IdempotencyKey)
	}
	return o
}

// runtimeHeader is the part of the runtime definition that Queuety hashes.
func (d Definition) runtimeHeader() *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("name", d.Name)
	o.Set("steps", d.Steps)
	o.Set("queue", orDefault(d.Queue, DefaultQueue))
	o.Set("priority", int64(d.Priority))
	o.Set("max_attempts", int64(orDefaultInt(d.MaxAttempts, DefaultMaxAttempts)))
	o.Set("cancel_handler", workflowdef.NilIfEmpty(d.OnCancel))
	o.Set("prune_after", workflowdef.PositiveOrNil(d.PruneAfter))
	if d.DeadlineSecs > 0 {
		o.Set("deadline_seconds", d.DeadlineSecs)
	} else {
		o.Set("deadline_seconds", nil)
	}
	o.Set("deadline_handler", workflowdef.NilIfEmpty(d.OnDeadline))
	o.Set("definition_version", workflowdef.NilIfEmpty(d.Version))
	return o
}

// DecodeDefinition reads what Definition.Encode wrote. The result
// dispatches like a builder's definition (RuntimeOrder is false).
func DecodeDefinition(raw []byte) (Definition, error) {
	o, err := workflowstate.DecodeObject("workflow definition", raw)
	if err != nil {
		return Definition{}, err
	}
	d, err := DefinitionFromRuntime(o)
	if err != nil {
		return Definition{}, err
	}
	d.RuntimeOrder, d.Hash = false, ""
	d.RunTimeoutSecs = intValue(o, "run_timeout_seconds")
	d.IdempotencyKey = strField(o, "idempotency_key")
	return d, nil
}

// preparedWorkflow is a definition with its initial state encoded, ready
// to insert.
type preparedWorkflow struct {
	def       Definition
	state     *phpjson.Object
	stateJSON []byte
	steps     []*stepDef
	queue     string
	// existing is set by insertWorkflow when the idempotency key named
	// a workflow that already existed, so nothing was written.
	existing bool
}

// prepareWorkflow builds the stored state: the initial keys, then
// Queuety's private keys in Queuety's order (WorkflowBuilder::dispatch's,
// or dispatch_defined_workflow's with RuntimeOrder). It adds those keys to
// state in place: callers hand over an object of their own.
func prepareWorkflow(def Definition, state *phpjson.Object) (*preparedWorkflow, error) {
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
	queue := orDefault(def.Queue, DefaultQueue)
	maxAttempts := min(orDefaultInt(def.MaxAttempts, DefaultMaxAttempts), MaxAttemptsLimit)

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
		state.Set(runTimeoutKey, def.RunTimeoutSecs)
	}
	stateJSON, err := phpjson.Marshal(state)
	if err != nil {
		return nil, invalidf("state does not encode as JSON: %v", err)
	}
	parsed, err := parseSteps(state)
	if err != nil {
		return nil, err
	}
	return &preparedWorkflow{def: def, state: state, stateJSON: stateJSON, steps: parsed, queue: queue}, nil
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
		state.Set("_on_cancel", handlerDefinition(def.OnCancel))
	}
	setPruneKeys(def, state)
	if def.DeadlineSecs > 0 {
		state.Set("_deadline_seconds", def.DeadlineSecs)
	}
	if def.OnDeadline != "" {
		state.Set("_on_deadline", handlerDefinition(def.OnDeadline))
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

// handlerDefinition is Queuety's stored form of a callback handler.
func handlerDefinition(class string) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("class", class)
	o.Set("payload", []any{})
	return o
}

// insertWorkflow writes a prepared workflow inside tx: the workflow row,
// its idempotency key, the first step's job(s) and the workflow_started
// log. With a known idempotency key it returns the existing id and writes
// nothing; a key inserted concurrently surfaces as ErrDuplicate.
func (e *Engine) insertWorkflow(ctx context.Context, tx driver.Tx, p *preparedWorkflow, now time.Time) (int64, error) {
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
		wf.ParentWorkflowID, wf.ParentStepIndex = def.ParentWorkflowID, ptr(def.ParentStepIndex)
	}
	if def.DeadlineSecs > 0 {
		wf.DeadlineAt = rowtime.Ceil(now).Add(time.Duration(def.DeadlineSecs) * time.Second)
	}
	setRunDeadline(wf, p.state, now)
	if err := tx.WorkflowInsert(ctx, wf); err != nil {
		return 0, err
	}
	if def.IdempotencyKey != "" {
		if err := tx.DispatchKeyInsert(ctx, def.IdempotencyKey, wf.ID, now); err != nil {
			return 0, err
		}
	}
	if err := e.enqueueStep(ctx, tx, wf, p.state, p.steps, 0, now); err != nil {
		return 0, err
	}
	err := tx.LogInsert(ctx, []*driver.LogEntry{{WorkflowID: wf.ID, Handler: def.Name, Queue: p.queue, Event: driver.LogWorkflowStarted, CreatedAt: now}})
	return wf.ID, err
}

// setRunDeadline starts a run's clock: run start + run timeout, capped at
// the execution deadline.
func setRunDeadline(wf *driver.Workflow, state *phpjson.Object, now time.Time) {
	wf.RunStartedAt = now
	wf.RunDeadlineAt = time.Time{}
	secs := intValue(state, runTimeoutKey)
	if secs <= 0 {
		return
	}
	d := now.Add(time.Duration(secs) * time.Second)
	if !wf.DeadlineAt.IsZero() && wf.DeadlineAt.Before(d) {
		d = wf.DeadlineAt
	}
	wf.RunDeadlineAt = d
}

// workflowExpired returns the timeout kind that has passed for a
// non-terminal workflow at now, or "". The execution deadline wins when
// both have passed.
func workflowExpired(wf *driver.Workflow, now time.Time) driver.TimeoutKind {
	if wf.Status.Terminal() {
		return ""
	}
	if !wf.DeadlineAt.IsZero() && !now.Before(wf.DeadlineAt) {
		return driver.TimeoutExecution
	}
	if !wf.RunDeadlineAt.IsZero() && !now.Before(wf.RunDeadlineAt) {
		return driver.TimeoutRun
	}
	return ""
}

// Dispatch enqueues one job for handler and returns its id. The payload
// must encode as a JSON object (a State, a map or a struct); nil means an
// empty payload. Invalid input returns an error wrapping
// driver.ErrInvalidArgument and writes nothing.
//
// With the Unique option, an identical pending or processing job's id is
// returned instead of a new one.
func (e *Engine) Dispatch(ctx context.Context, handler string, payload *phpjson.Object, spec JobSpec) (int64, error) {
	if e.obs == nil {
		job, _, err := e.dispatch(ctx, handler, payload, spec)
		if err != nil {
			return 0, err
		}
		return job.ID, nil
	}
	d := observe.Dispatch{Kind: observe.DispatchJob, Name: handler, Queue: orDefault(spec.Queue, DefaultQueue), Count: 1}
	ctx = e.obs.DispatchStart(ctx, d)
	job, existing, err := e.dispatch(ctx, handler, payload, spec)
	r := observe.Dispatched{Existing: existing, Err: err}
	if err == nil {
		r.ID = job.ID
		if !existing {
			r.Jobs = []observe.JobRef{{ID: job.ID, Queue: job.Queue, Handler: job.Handler}}
		}
	}
	e.obs.DispatchEnd(ctx, d, r)
	if err != nil {
		return 0, err
	}
	return job.ID, nil
}

// dispatch writes one job and returns it, with whether Unique found an
// identical one instead.
func (e *Engine) dispatch(ctx context.Context, handler string, payload *phpjson.Object, spec JobSpec) (*driver.Job, bool, error) {
	job, err := e.buildJob(JobRequest{Handler: handler, Payload: payload, Spec: spec})
	if err != nil {
		return nil, false, err
	}
	var fresh []*driver.Job
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		fresh, err = insertNewJobs(ctx, tx, []*driver.Job{job}, []bool{spec.Unique})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("queuety: dispatch %q: %w", handler, err)
	}
	if len(fresh) > 0 {
		e.wake()
	}
	return job, len(fresh) == 0, nil
}

// DispatchMany enqueues many jobs with multi-row inserts, in one
// transaction, and returns their ids in order. Either every job is written
// or none. A request with the Unique option gets the id of an identical
// pending or processing job, or of an identical unique request earlier in
// the same call, instead of a new job (see insertJobs).
func (e *Engine) DispatchMany(ctx context.Context, reqs []JobRequest) ([]int64, error) {
	if e.obs == nil {
		_, ids, err := e.dispatchMany(ctx, reqs)
		return ids, err
	}
	d := observe.Dispatch{Kind: observe.DispatchBatch, Count: len(reqs)}
	ctx = e.obs.DispatchStart(ctx, d)
	jobs, ids, err := e.dispatchMany(ctx, reqs)
	r := observe.Dispatched{Err: err}
	if err == nil {
		r.Jobs = make([]observe.JobRef, len(jobs))
		for i, j := range jobs {
			r.Jobs[i] = observe.JobRef{ID: j.ID, Queue: j.Queue, Handler: j.Handler}
		}
	}
	e.obs.DispatchEnd(ctx, d, r)
	return ids, err
}

// dispatchMany writes the jobs of reqs and returns the rows it inserted
// (not those Unique found) and every request's id.
func (e *Engine) dispatchMany(ctx context.Context, reqs []JobRequest) ([]*driver.Job, []int64, error) {
	jobs, unique, err := e.buildJobs(reqs)
	if err != nil {
		return nil, nil, err
	}
	var fresh []*driver.Job
	if err := e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		fresh, err = insertNewJobs(ctx, tx, jobs, unique)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("queuety: dispatch batch: %w", err)
	}
	if len(fresh) > 0 {
		e.wake()
	}
	return fresh, jobIDs(jobs), nil
}

// JobRequest is one job to dispatch: a handler, its payload as an ordered
// JSON object (nil for none) and its resolved options. The engine takes
// the payload over: it adds the runtime key to it in place.
type JobRequest struct {
	Handler string
	Payload *phpjson.Object
	Spec    JobSpec
}

// buildJob validates a request and turns it into a row.
func (e *Engine) buildJob(r JobRequest) (*driver.Job, error) {
	spec := r.Spec
	if err := ValidateHandlerName(r.Handler); err != nil {
		return nil, err
	}
	if err := ValidateJobSpec(spec); err != nil {
		return nil, err
	}
	doc := r.Payload
	if doc == nil {
		doc = phpjson.NewObject()
	}
	for _, k := range doc.Keys() {
		if k == runtimeKey || k == callbackKey {
			return nil, invalidf("payload key %q is reserved", k)
		}
	}
	rt := jobruntime.Options{MaxAttempts: spec.MaxAttempts, Backoff: spec.Backoff, Timeouts: spec.Timeouts, RateLimit: spec.Resources.RateLimit}
	if rt.Backoff != nil || rt.Timeouts != (ActivityTimeouts{}) || rt.RateLimit.Max > 0 {
		if rt.MaxAttempts == 0 {
			rt.MaxAttempts = DefaultMaxAttempts
		}
		doc.Set(runtimeKey, rt.Encode())
	}
	payload, err := phpjson.Marshal(doc)
	if err != nil {
		return nil, invalidf("payload does not encode as JSON: %v", err)
	}
	now := e.clock.Now()
	job := &driver.Job{
		Queue:       orDefault(spec.Queue, DefaultQueue),
		Handler:     r.Handler,
		Payload:     payload,
		Priority:    spec.Priority,
		Status:      driver.JobPending,
		MaxAttempts: orDefaultInt(spec.MaxAttempts, DefaultMaxAttempts),
		AvailableAt: rowtime.Due(now, spec.Delay),
		DependsOn:   spec.DependsOn,
		CostUnits:   1,
		CreatedAt:   rowtime.Floor(now),
	}
	if spec.Unique {
		sum := sha256.Sum256(payload)
		job.PayloadHash = hex.EncodeToString(sum[:])
	}
	applyResources(spec.Resources, job)
	applyScheduleDeadlines(job, spec.Timeouts, now)
	return job, nil
}

// applyScheduleDeadlines sets the deadlines that start at scheduling.
func applyScheduleDeadlines(job *driver.Job, t ActivityTimeouts, now time.Time) {
	if t.ScheduleToStart > 0 {
		job.ScheduleToStartAt = job.AvailableAt.Add(t.ScheduleToStart)
	}
	if t.ScheduleToClose > 0 {
		job.ScheduleToCloseAt = now.Add(t.ScheduleToClose)
	}
}

// ValidateHandlerName checks a handler name: 1-255 characters.
func ValidateHandlerName(h string) error {
	switch {
	case h == "":
		return invalidf("handler name is empty")
	case len(h) > 255:
		return invalidf("handler name is longer than 255 characters")
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// ValidateJobSpec checks the values a JobSpec would store.
func ValidateJobSpec(s JobSpec) error {
	if len(s.Queue) > 64 {
		return invalidf("queue name %q is longer than 64 characters", s.Queue)
	}
	if s.PrioritySet && !s.Priority.Valid() {
		return invalidf("priority %d out of range (0-3)", int(s.Priority))
	}
	if s.Delay < 0 {
		return invalidf("delay must not be negative, got %s", s.Delay)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return invalidf("max attempts %d out of range (1-%d)", s.MaxAttempts, MaxAttemptsLimit)
	}
	if s.DependsOn < 0 {
		return invalidf("depends-on job id must be positive, got %d", s.DependsOn)
	}
	if err := jobruntime.ValidateBackoff(s.Backoff); err != nil {
		return err
	}
	if err := validateResources(s.Resources); err != nil {
		return err
	}
	return jobruntime.ValidateTimeouts(s.Timeouts)
}
