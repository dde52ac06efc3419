package engine

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

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
	if n, ok := o.Get("name"); !ok || n == nil || strField(o, "name") == "" {
		return Definition{}, invalidf("workflow template has no name")
	}
	d.RunTimeoutSecs = max(0, intValue(o, "run_timeout_seconds"))
	if err := d.checkBudgets(); err != nil {
		return Definition{}, err
	}
	if _, err := prepareWorkflow(d, phpjson.NewObject()); err != nil {
		return Definition{}, fmt.Errorf("workflow template %q: %w", d.Name, err)
	}
	return d, nil
}
