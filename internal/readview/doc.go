// Package readview holds the read views of a workflow: describing it
// (describe.go, its timeline in timeline.go), exporting its history in
// Queuety's export format (export.go), a bounded page of that history
// (trace.go), and the public state it had after a step (state.go).
//
// The views only read: each is one store transaction of reads, bounded
// by the limits of package queuetytype (DescribeOptions, TraceOptions and
// the Describe* and Trace* constants), except ExportWorkflow, which reads
// the whole history. A Views is built by New from a driver.Store and a
// clock; it imports no engine. What a workflow's stored state means (its
// private keys, its steps and their runtime) is read in stateview.go
// (ViewState) with the format packages internal/workflowstate,
// internal/workflowdef and internal/jobruntime, which the engine writes
// with; the state after a step is internal/operate's StateAfterStep, which
// a rewind restores too. So a change to a format is made in one place.
//
// The writes that share these formats are internal/operate's: ReplayWorkflow
// reads an export, and RewindWorkflow restores the state after a step.
// Package queuety's Client serves the views (DescribeWorkflow,
// ExportWorkflow, TraceWorkflow, StateAt); the CLI and the UI reach them
// through the Client.
package readview
