// Package steptrace holds what a step attempt adds to its events beyond
// its state: Queuety's ExecutionContext trace (the input, output and
// context a handler sets, the reserved "_queuety_trace" output key, the
// artifacts the attempt stored) and the chunks of a streaming step
// (Queuety's StreamingStep and ChunkStore).
//
// A Trace is one attempt's buffer. The engine makes one for every attempt
// a worker claims, reaches it from a handler's ctx (SetTraceInput,
// StreamChunk, ...), and applies it to the step_completed,
// step_item_completed and step_failed events it writes (Completed,
// ItemCompleted, Failed, Artifacts). The buffer's rules touch no row; the
// streaming methods read and write the job's chunk rows in their own
// transactions, through the driver.Store they are given. It imports no
// engine.
package steptrace
