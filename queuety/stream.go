package queuety

import (
	"context"

	"github.com/queuety/queuety-go/internal/engine"
)

// TraceOutputKey is the reserved step-output key for trace metadata
// (Queuety's "_queuety_trace"). A step may return an object under it with
// "input", "output", "context", "artifacts" and "chunks"; they go to the
// step's events as TraceInput, TraceOutput and TraceContext would put
// them (artifacts and chunks are appended to the event's lists), and the
// key is never merged into the workflow state.
const TraceOutputKey = engine.TraceOutputKey

// StreamChunk stores the next chunk of the workflow step running in ctx
// (Queuety's streaming steps): the row is written at once, in its own
// transaction, so the chunks a step streamed survive a crash or a failed
// attempt and the next attempt reads them with StreamedChunks. Each chunk
// also sends a heartbeat with details {"streaming_chunks": n}. When the
// step completes, its step_completed event lists a reference to each
// chunk (job, workflow and step, as Queuety PHP writes them: chunk_index
// and content null) and the chunks are deleted: the step's output is the
// durable record, so a streaming step returns what it built from them.
//
// It returns ErrNoAttempt outside a handler, ErrNoWorkflowStep in a
// plain job's handler, and an error wrapping ErrInvalidArgument for
// content that is not valid UTF-8 (the column holds text).
func StreamChunk(ctx context.Context, content string) error { return engine.StreamChunk(ctx, content) }

// StreamedChunks returns the chunks stored so far for the workflow step
// running in ctx, in order: those of earlier attempts first (Queuety's
// $existing_chunks), then this attempt's. A step resumes by skipping the
// work the stored chunks cover, and builds its output from all of them.
// It returns the errors StreamChunk does.
func StreamedChunks(ctx context.Context) ([]string, error) { return engine.StreamedChunks(ctx) }

// TraceInput sets the input the step_completed and step_failed events of
// the workflow step running in ctx record instead of the state it
// received (Queuety's trace_input); only a JSON object or list does, as
// in Queuety. It returns ErrNoAttempt outside a handler, ErrNoWorkflowStep
// in a plain job's handler, and an error wrapping ErrInvalidArgument when
// input does not encode as JSON.
func TraceInput(ctx context.Context, input any) error { return engine.SetTraceInput(ctx, input) }

// TraceOutput sets the output the step_completed event of the workflow
// step running in ctx records instead of the step's output (Queuety's
// trace_output); only a JSON object or list does. The state still merges
// the step's real output. It returns the errors TraceInput does.
func TraceOutput(ctx context.Context, output any) error { return engine.SetTraceOutput(ctx, output) }

// TraceContext merges values into the context the events of the workflow
// step running in ctx record (Queuety's trace_context): later calls add
// keys and replace values; a map's keys go in sorted order. It returns
// the errors TraceInput does.
func TraceContext(ctx context.Context, values map[string]any) error {
	return engine.AddTraceContext(ctx, values)
}
