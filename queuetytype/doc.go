// Package queuetytype holds the rows, enums, options and errors that the
// queuety API returns and takes: job, workflow, schedule, batch, log,
// failure and webhook rows, their status enums, the workflow description
// and its nested types, the attempt info a handler reads, activity
// timeouts, backoffs and the error types.
//
// It is a leaf package: it imports nothing from this module, so package
// queuety, the store seam (store/driver), the engine, the worker, the UI
// and queuetytest all share its definitions, and applications can name
// them without importing an internal or unstable package. Its types are
// part of the stable API.
//
// Rows hold what a store reads: times are UTC, and zero values stand for
// SQL NULL (a zero time, a zero id, an empty string). JSON columns are
// kept as the stored text ([]byte), as Queuety PHP wrote it.
package queuetytype
