package engine

import "github.com/queuety/queuety-go/internal/workflowdef"

// Internal handler names: placeholder steps the engine runs itself (the
// definition format names them; see internal/workflowdef).
const (
	HandlerDelay            = workflowdef.HandlerDelay
	HandlerWaitForSignal    = workflowdef.HandlerWaitForSignal
	HandlerForEach          = workflowdef.HandlerForEach
	HandlerRepeat           = workflowdef.HandlerRepeat
	HandlerRunWorkflow      = workflowdef.HandlerRunWorkflow
	HandlerStartWorkflows   = workflowdef.HandlerStartWorkflows
	HandlerWaitForWorkflows = workflowdef.HandlerWaitForWorkflows
)

// InternalHandlers lists the internal handlers every Go worker runs.
func InternalHandlers() []string {
	return []string{HandlerDelay, HandlerWaitForSignal, HandlerForEach, HandlerRepeat, HandlerRunWorkflow,
		HandlerStartWorkflows, HandlerWaitForWorkflows}
}

// IsInternalHandler reports whether name is reserved for the engine.
func IsInternalHandler(name string) bool {
	return len(name) >= 10 && name[:10] == "__queuety_"
}
