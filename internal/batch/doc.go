// Package batch holds Queuety's batches and chains: the batch row's
// transitions (a completion or burial counts it down; the end, a first
// failure and a cancel fire its then, catch and finally callbacks), the
// callback jobs those transitions enqueue and where they are routed, the
// writing of a batch's or a chain's jobs, and the chain catch handler a
// buried chain job calls (batch.go, chain.go).
//
// A Service is built by New from a driver.Store and Config: a clock, the
// PHP bridge queue, the deadline handoff period, and what it needs to know
// of the engine, passed as functions: KnownCallback (which worker of this
// process runs a callback) and BridgeRuntime (the runtime options a job
// for Queuety PHP's bridge class carries). It holds no *engine.Engine and
// wakes no worker: the caller of a write runs it with a note of the jobs
// it inserts (internal/jobnote) and wakes workers for them once it
// committed. The engine builds one in its constructor, validates and
// builds the jobs of a batch or chain from their requests (the dispatch
// rules are the engine's) and calls JobsCompleted and JobBuried in the
// transactions that complete and bury jobs; its batch sweep hands batches
// another engine finished to SettleForeign.
package batch
