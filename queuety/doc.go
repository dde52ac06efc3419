// Package queuety is the API applications use: Open a store by DSN, then
// dispatch jobs and step workflows, signal and operate on them, and read
// their state through the Client.
//
//	q, err := queuety.Open(ctx, "mysql://user:pass@127.0.0.1:3306/wordpress?prefix=wp_")
//	id, err := q.Dispatch(ctx, "send_email", queuety.State{"to": addr}, queuety.OnQueue("mail"))
//
// Workflows are easiest to write with package builder; package worker runs
// the handlers registered by name (StepFunc, JobFunc, CallbackFunc), and
// package deadline runs the sweeps. Rows are Queuety's own, so Go and
// Queuety PHP share one database.
//
// Handlers read their attempt with JobInfoFrom, report progress with
// Heartbeat, fail for good with NonRetryable and restart a workflow with
// ContinueAsNew. Timeouts surface as *TimeoutError (errors.As finds it),
// results from superseded attempts as ErrStaleAttempt.
//
// The engine behind the Client lives in internal/engine; the storage seam a
// store implements is package store/driver.
package queuety
