// Package interop holds the tests that run the Go engine against rows
// written by Queuety PHP 0.22 and compare the result with what PHP itself
// wrote.
//
// The rows come from testdata/queuety-php (see its README): each scenario
// file has snapshots of all sixteen wp_queuety_* tables taken after each
// step of a short PHP script. A test creates the tables exactly as PHP does
// (schema.sql), opens a Go client on them (which runs the Go migrations on
// top), loads one snapshot, performs the next step with the Go API or a Go
// worker, and compares the tables with the snapshot PHP wrote after the
// same step.
//
// What is compared, and what is not:
//
//   - Exactly: ids, statuses, attempts, current_step, handler strings,
//     queues, priorities, error messages and classes, job payload bytes,
//     signal payload bytes, and the bytes of _steps and _definition_hash.
//   - As JSON values: workflow state, and the input, output, state_before,
//     state_after, context and error columns of workflow_events. The Go
//     engine encodes a step's output with its keys sorted (a Go map has no
//     order), so keys a Go step adds may sit in another order than PHP's;
//     the keys that were already there keep their order, and that is
//     checked too.
//   - Only NULL or not: DATETIME columns, duration_ms, and stack traces,
//     which differ on every run.
//   - Log and event sequences, with their job_id, workflow_id, step_index,
//     handler, queue, attempt and error_message.
//
// Where the Go engine deliberately differs from PHP, a test adjusts PHP's
// expected rows and says why in a comment: memory_peak_kb is NULL; a delay
// step writes one 'completed' log row, not two; the OnDeadline handler runs
// as a callback job after the failure commits, and so do batch callbacks
// and chain catch handlers (a test runs them, compares what they got with
// what PHP's classes got, and removes their rows); the second branch of a
// parallel step sees the state the first branch left; and Go-only columns
// (claim_token, activity deadlines, run_number, ...) are extra.
//
// The tests need MariaDB or MySQL (see internal/testdb) and skip without it.
package interop
