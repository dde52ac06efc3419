package worker

import "github.com/queuety/queuety-go/queuety"

// HandleBatchCallback registers a batch's then, catch or finally callback
// (see queuety.Registry.HandleBatchCallback).
func (w *Worker) HandleBatchCallback(name string, fn queuety.BatchCallbackFunc) {
	w.reg.HandleBatchCallback(name, fn)
}

// HandleChainCatch registers a chain's catch handler (see
// queuety.Registry.HandleChainCatch).
func (w *Worker) HandleChainCatch(name string, fn queuety.ChainCatchFunc) {
	w.reg.HandleChainCatch(name, fn)
}
