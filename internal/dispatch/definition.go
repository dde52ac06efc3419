package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

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
	o.Set("queue", orDefault(d.Queue, queuetytype.DefaultQueue))
	o.Set("priority", int64(d.Priority))
	o.Set("max_attempts", int64(orDefaultInt(d.MaxAttempts, queuetytype.DefaultMaxAttempts)))
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
	d.RunTimeoutSecs = workflowdef.Int(o, "run_timeout_seconds")
	d.IdempotencyKey = workflowdef.String(o, "idempotency_key")
	return d, nil
}

// TemplateDefinition reads a workflow template: a runtime definition
// bundle (Queuety's build_runtime_definition shape, as Encode writes it
// or Queuety PHP built it) that dispatches the way Queuety's
// dispatch_workflow_definition does (RuntimeOrder). The Go engine's
// run_timeout_seconds is kept; an idempotency key in the bundle is not (it
// is given per dispatch, as Queuety's run_workflow options give it). The
// steps are checked as a dispatch would check them, so a bad bundle fails
// here rather than at every dispatch.
func TemplateDefinition(raw []byte) (Definition, error) {
	o, err := workflowstate.DecodeObject("workflow template", raw)
	if err != nil {
		return Definition{}, err
	}
	d, err := DefinitionFromRuntime(o)
	if err != nil {
		return Definition{}, invalidf("workflow template: %v", err)
	}
	if n, ok := o.Get("name"); !ok || n == nil || workflowdef.String(o, "name") == "" {
		return Definition{}, invalidf("workflow template has no name")
	}
	d.RunTimeoutSecs = max(0, workflowdef.Int(o, "run_timeout_seconds"))
	if err := d.checkBudgets(); err != nil {
		return Definition{}, err
	}
	if _, err := Prepare(d, phpjson.NewObject()); err != nil {
		return Definition{}, fmt.Errorf("workflow template %q: %w", d.Name, err)
	}
	return d, nil
}

// budgets returns d's budgets in workflowstate.BudgetKeys order.
func (d Definition) budgets() []int {
	return []int{d.MaxTransitions, d.MaxForEachItems, d.MaxStateBytes, d.MaxCostUnits, d.MaxStartedWorkflows}
}

// setBudget sets the budget named key.
func (d *Definition) setBudget(key string, n int) {
	switch key {
	case "max_transitions":
		d.MaxTransitions = n
	case "max_for_each_items":
		d.MaxForEachItems = n
	case "max_state_bytes":
		d.MaxStateBytes = n
	case "max_cost_units":
		d.MaxCostUnits = n
	case "max_started_workflows":
		d.MaxStartedWorkflows = n
	}
}

// checkBudgets rejects negative budgets.
func (d Definition) checkBudgets() error {
	for i, n := range d.budgets() {
		if n < 0 {
			return invalidf("workflow %s must be at least 1, got %d", workflowstate.BudgetKeys[i], n)
		}
	}
	return nil
}

// budgetObject is Queuety's workflow_budget: the set budgets, in order.
// Empty, it encodes as [] as PHP's empty array does.
func (d Definition) budgetObject() *phpjson.Object {
	o := phpjson.NewObject()
	for i, n := range d.budgets() {
		if n > 0 {
			o.Set(workflowstate.BudgetKeys[i], int64(n))
		}
	}
	return o
}

// hash is Queuety's definition_hash: the sha256 of the JSON of the
// runtime header and the hashed budgets, as WorkflowBuilder computes it.
func (d Definition) hash() string {
	doc := d.runtimeHeader()
	doc.Set("max_transitions", workflowdef.PositiveOrNil(d.MaxTransitions))
	doc.Set("max_for_each_items", workflowdef.PositiveOrNil(d.MaxForEachItems))
	doc.Set("max_state_bytes", workflowdef.PositiveOrNil(d.MaxStateBytes))
	doc.Set("compensate_on_failure", d.CompensateOnFailure)
	sum := sha256.Sum256(workflowstate.EncodeJSON(doc))
	return hex.EncodeToString(sum[:])
}

// RuntimeObject writes d in the shape of Queuety's
// WorkflowBuilder::build_runtime_definition: the object a start_workflows
// step stores as workflow_definition. definition_hash is d.Hash when set,
// else computed.
func (d Definition) RuntimeObject() *phpjson.Object {
	o := d.runtimeHeader()
	o.Set("definition_hash", orDefault(d.Hash, d.hash()))
	o.Set("workflow_budget", d.budgetObject())
	o.Set("compensate_on_failure", d.CompensateOnFailure)
	return o
}

// DefinitionFromRuntime reads a runtime definition (RuntimeObject's shape,
// or one Queuety PHP built) the way Queuety's dispatch_defined_workflow
// does: a missing queue is "default", max_attempts is at least 1 (and at
// most MaxAttemptsLimit, what the attempts column holds), only
// positive budgets count, and definition_hash is kept as given. The
// result has RuntimeOrder set.
func DefinitionFromRuntime(o *phpjson.Object) (Definition, error) {
	if o == nil {
		return Definition{}, errors.New("workflow definition is missing")
	}
	d := Definition{
		Name: workflowdef.String(o, "name"), Queue: workflowdef.String(o, "queue"),
		OnCancel: workflowdef.HandlerRef(o, "cancel_handler"), OnDeadline: workflowdef.HandlerRef(o, "deadline_handler"),
		Version: workflowdef.String(o, "definition_version"), Hash: workflowdef.String(o, "definition_hash"),
		RuntimeOrder: true,
	}
	if d.Name == "" {
		d.Name = "workflow"
	}
	if p, ok := workflowstate.PriorityField(o); ok {
		d.Priority = p
	}
	d.MaxAttempts = queuetytype.DefaultMaxAttempts
	if _, ok := o.Get("max_attempts"); ok {
		d.MaxAttempts = jobruntime.ClampAttempts(max(1, workflowdef.Int(o, "max_attempts")))
	}
	if secs := workflowdef.Int(o, "deadline_seconds"); secs > 0 {
		d.DeadlineSecs = secs
	}
	if b, ok := o.Get("workflow_budget"); ok {
		if budget, ok := b.(*phpjson.Object); ok {
			for _, k := range workflowstate.BudgetKeys {
				if v, ok := budget.Get(k); ok {
					if n, ok := v.(int64); ok && n > 0 {
						d.setBudget(k, int(n))
					}
				}
			}
		}
	}
	if n := workflowdef.Int(o, "prune_after"); n > 0 {
		d.PruneAfter = int(n)
	}
	if v, _ := o.Get("compensate_on_failure"); v == true {
		d.CompensateOnFailure = true
	}
	raw, _ := o.Get("steps")
	steps, ok := raw.([]any)
	if !ok || len(steps) == 0 {
		return d, fmt.Errorf("workflow definition %q has no steps list", d.Name)
	}
	d.Steps = steps
	return d, nil
}
