package workflowdef

import "github.com/queuety/queuety-go/queuetytype"

// Internal handler names: the placeholder jobs of the steps that run no
// user handler, which the engine runs itself.
const (
	HandlerDelay            = "__queuety_delay"
	HandlerWaitForSignal    = "__queuety_wait_for_signal"
	HandlerForEach          = "__queuety_for_each"
	HandlerRepeat           = "__queuety_repeat"
	HandlerRunWorkflow      = "__queuety_run_workflow"
	HandlerStartWorkflows   = "__queuety_start_workflows"
	HandlerWaitForWorkflows = "__queuety_wait_for_workflows"
)

// PlaceholderHandler maps a step type to the internal handler of its
// placeholder job.
func PlaceholderHandler(t queuetytype.StepType) string {
	switch t {
	case queuetytype.StepDelay:
		return HandlerDelay
	case queuetytype.StepWaitForSignal:
		return HandlerWaitForSignal
	case queuetytype.StepForEach:
		return HandlerForEach
	case queuetytype.StepRepeat:
		return HandlerRepeat
	case queuetytype.StepRunWorkflow:
		return HandlerRunWorkflow
	case queuetytype.StepStartWorkflows:
		return HandlerStartWorkflows
	case queuetytype.StepWaitForWorkflows:
		return HandlerWaitForWorkflows
	}
	return "__queuety_" + string(t)
}
