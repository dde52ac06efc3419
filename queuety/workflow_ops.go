package queuety

import "github.com/queuety/queuety-go/queuetytype"

// ContinueAsNew ends the current run of the workflow and starts a new one
// at step 0 with state as its whole public state. Return it from a step:
//
//	return nil, queuety.ContinueAsNew(queuety.State{"cursor": next})
//
// The execution deadline carries over unchanged; the run deadline is
// recomputed from now; the run number goes up.
func ContinueAsNew(state State) error {
	if state == nil {
		state = State{}
	}
	return &queuetytype.ContinueAsNewError{State: map[string]any(state)}
}
