// Package admission holds what a worker's claims may take: rate limits per
// handler, concurrency groups and cost budgets, enforced in the claim's
// own transaction (admission.go describes the rules, check.go the checks
// under the limits' lock rows).
//
// An Admission is built by New for one worker from its Limits, a function
// reporting the cost units the worker runs, and a RuntimeRate function
// that reads the rate limit a claimed job carries: the runtime options of
// a payload are the engine's format, so the engine passes that reader
// (engine.NewAdmission). An Admission holds no *engine.Engine and no
// store: the engine's claim calls Claim and HasDue inside its own
// transaction.
//
// Workflow cost budgets (max transitions, for-each items, cost units
// counted in a workflow's state) stay in the engine with the state they
// count, and a job's resources (its concurrency group, limit and cost) are
// read and written by the engine's dispatch; this package only enforces
// them at claim time.
package admission
