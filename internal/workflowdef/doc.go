// Package workflowdef is the workflow definition format: the _steps list a
// workflow's state carries, as Queuety PHP writes and reads it. It is the
// one place that knows the keys of a step entry, the defaults a missing
// key takes, the legacy forms Queuety still accepts (a bare class string,
// "handlers" for "branches", handler definitions as objects), and the
// internal handler names of the placeholder jobs the engine runs for the
// step types that run no user handler.
//
// Package queuety writes steps with Encode (from a validated
// queuety.WorkflowStep); the engine reads them back with Parse, from
// workflows started by Go or by PHP. Step types are the typed constants
// of queuetytype.StepType. Rows written here stay byte-compatible with
// Queuety PHP: interop/ and testdata/ pin the shapes.
package workflowdef
