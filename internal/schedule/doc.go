// Package schedule holds recurring schedules: saving, removing, enabling
// and running them by hand, and the tick that fires their due slots
// under their catch-up and overlap policies.
//
// A Service is built by New from a driver.Store, a clock, a logger and
// the few engine transitions a firing needs, passed in Config:
// StartWorkflow starts the workflow a workflow schedule fires (in the
// tick's transaction), WakeJobs wakes the claim loops after a firing
// committed and WakeSchedules wakes the schedule ticks after a schedule
// changed. The Service holds no *engine.Engine; the engine builds one in
// its constructor and serves it through Engine.Schedules.
//
// The tick's loop lives with the other sweeps (the engine's
// TickSchedules, driven by package deadline and the workers): it takes
// due rows with SKIP LOCKED and hands each to TickOne under its lock,
// which fires it and moves its next run on with a compare-and-set.
package schedule
