package engine

// Internal handler names: placeholder steps the engine runs itself.
const (
	HandlerDelay            = "__queuety_delay"
	HandlerWaitForSignal    = "__queuety_wait_for_signal"
	HandlerForEach          = "__queuety_for_each"
	HandlerRepeat           = "__queuety_repeat"
	HandlerRunWorkflow      = "__queuety_run_workflow"
	HandlerStartWorkflows   = "__queuety_start_workflows"
	HandlerWaitForWorkflows = "__queuety_wait_for_workflows"
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
