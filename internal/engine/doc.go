// Package engine holds the engine's rules, written once: claiming jobs,
// recording results with attempt fencing, retries and backoff, leases and
// heartbeats, activity and workflow timeouts, advancing workflows (state
// merge, parallel joins, _next_step, signal waits, continue-as-new),
// failure and expiry with their callbacks, schedules, and replaying,
// rewinding and forking a workflow. Every transition is one driver.Store
// transaction.
//
// An Engine is built by New from a store, a clock, a logger and Config; it
// never reaches back to the queuety.Client that owns it. Package queuety
// translates its user types into the engine's; package worker drives
// claims and results, and package deadline drives the sweeps.
//
// The sweeps are split by role: which rows are due, in what batches, and
// how often, is internal/sweep's (the finders) and package deadline's (the
// loops); what happens to a due row is the engine's, in the sweep's
// transaction, through the transitions in sweepsteps.go (expiry, wait
// timeouts, stale recovery, schedule ticks) and in handoff.go, overrun.go,
// batchsweep.go and foreignends.go. So every state change has one home
// here, and the sweeps can change how they look for rows without touching
// a rule.
//
// Files are split by concern: claim, admission (rate limits, concurrency
// groups and cost budgets, checked by the claim), complete, retry, lease,
// heartbeat, timeout, dispatch, resources, steps, stepjobs, statefields,
// waits, failure, continueasnew, operate, schedule, history (rewind and
// fork), replay, sweepsteps.
//
// The read views (describing a workflow, exporting and tracing its
// history, the state after a step) live in package internal/readview,
// which reads the store on its own. It learns what a workflow's state
// means from stateview.go (ViewState, StateAfterStep): the state format
// stays here, in one place.
package engine
