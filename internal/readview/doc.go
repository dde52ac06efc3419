// Package readview holds the read views of a workflow: describing it
// (describe.go, its timeline in timeline.go), exporting its history in
// Queuety's export format (export.go), a bounded page of that history
// (trace.go), and the public state it had after a step (state.go).
//
// The views only read: each is one store transaction of reads, bounded
// by the limits of package queuetytype (DescribeOptions, TraceOptions and
// the Describe* and Trace* constants), except ExportWorkflow, which reads
// the whole history. A Views is built by New from a driver.Store and a
// clock; it holds no *engine.Engine. What a workflow's stored state means
// (its private keys, its steps and their runtime) is the engine's format:
// the views read it through engine.ViewState and engine.StateAfterStep,
// so a change to that format is made in the engine alone.
//
// The writes that share these formats stay in the engine: ReplayWorkflow
// reads an export, and RewindWorkflow restores the state after a step.
// Package queuety's Client serves the views (DescribeWorkflow,
// ExportWorkflow, TraceWorkflow, StateAt); the CLI and the UI reach them
// through the Client.
package readview
