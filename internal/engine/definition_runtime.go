package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

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
		Name: strField(o, "name"), Queue: strField(o, "queue"),
		OnCancel: handlerRef(o, "cancel_handler"), OnDeadline: handlerRef(o, "deadline_handler"),
		Version: strField(o, "definition_version"), Hash: strField(o, "definition_hash"),
		RuntimeOrder: true,
	}
	if d.Name == "" {
		d.Name = "workflow"
	}
	if p, ok := workflowstate.PriorityField(o); ok {
		d.Priority = p
	}
	d.MaxAttempts = DefaultMaxAttempts
	if _, ok := o.Get("max_attempts"); ok {
		d.MaxAttempts = jobruntime.ClampAttempts(max(1, intValue(o, "max_attempts")))
	}
	if secs := intValue(o, "deadline_seconds"); secs > 0 {
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
	if n := intValue(o, "prune_after"); n > 0 {
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
