// Package workflowstate is the workflow state format: what each key of a
// workflow's stored state means, and the rules over it that touch no row.
// Package internal/workflowdef reads and writes the definition (_steps);
// this package reads and changes the rest of the state, as Queuety PHP
// keeps it:
//
//   - the JSON itself: decoding and encoding as PHP does, the public and
//     private keys (state.go), PHP's integer-keyed arrays (phparray.go);
//   - the fields the workflow's jobs inherit (_queue, _priority,
//     _max_attempts), _next_step and the merge of a step's output
//     (fields.go);
//   - budgets and their counters (budget.go);
//   - a for-each step's runtime and aggregate (foreach.go), a repeat
//     step's iterations (repeat.go), what a signal wait or a wait for
//     workflows settles with, and the answers a wait takes (waits.go).
//
// Every function here is pure: it reads or changes a decoded state and
// never a store. Package internal/engine applies these rules inside its
// transactions (when a step completes, a signal arrives, a workflow is
// retried), and package internal/readview reads stored states with them.
// The package imports nothing of the engine, so both can use it.
package workflowstate
