// Package artifact holds the artifacts of workflows: the rows of Queuety's
// artifacts table, validated and encoded as Queuety's ArtifactStore writes
// them (Row), decoded as it reads them (Decode), and a Service that puts,
// reads, lists and deletes them, each in one store transaction.
//
// The engine builds the Service in engine.New with a Stored hook, through
// which an artifact stored from a step handler's ctx is recorded on the
// running attempt and so on its step_completed event; storing an artifact
// for the step running in ctx (engine.PutCurrentArtifact) stays in the
// engine, which knows the attempt.
package artifact
