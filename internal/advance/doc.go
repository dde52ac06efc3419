// Package advance holds workflow advancement: what a claimed workflow step
// carries beside its job (the workflow row, its decoded state, its step
// definitions and the step it runs), so the engine's job core and the
// advancement rules share one description of a running step.
//
// The rules touch no row on their own: the engine runs them inside its
// transactions and owns the entry points (claim, complete, the sweeps'
// transitions).
package advance
