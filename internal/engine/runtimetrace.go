package engine

// This file wires a step attempt to its trace (package
// internal/steptrace): the runtime trace metadata a handler sets through
// its ctx (Queuety's trace_input, trace_output, trace_context and the
// reserved "_queuety_trace" output key) and the chunks of a streaming
// step, and the events and completions that read them.

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/steptrace"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// TraceOutputKey is the reserved step-output key whose value is trace
// metadata for the step's events, never merged into the state.
const TraceOutputKey = steptrace.OutputKey

// traceOf returns the attempt running in ctx, or an error naming what.
func traceOf(ctx context.Context, what string) (*attemptCtx, error) {
	at, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return nil, fmt.Errorf("queuety: %s: %w", what, ErrNoAttempt)
	}
	if at.info.WorkflowID == 0 || at.info.StepIndex < 0 {
		return nil, fmt.Errorf("queuety: %s: job %d: %w", what, at.info.JobID, ErrNoWorkflowStep)
	}
	if at.hb.cj.trace == nil {
		return nil, fmt.Errorf("queuety: %s: job %d is not traced", what, at.info.JobID)
	}
	return at, nil
}

// SetTraceInput sets the input the running step's events record
// (Queuety's trace_input). Only a JSON object or list replaces the input
// of a step_completed or step_failed event, as in Queuety.
func SetTraceInput(ctx context.Context, input any) error {
	return setTrace(ctx, "trace input", func(t *steptrace.Trace) error { return t.SetInput(input) })
}

// SetTraceOutput sets the output the running step's completion event
// records (Queuety's trace_output) instead of the step's output; only a
// JSON object or list does.
func SetTraceOutput(ctx context.Context, output any) error {
	return setTrace(ctx, "trace output", func(t *steptrace.Trace) error { return t.SetOutput(output) })
}

// AddTraceContext merges values into the context the running step's
// events record (Queuety's trace_context); keys go in sorted order and a
// later value replaces an earlier one.
func AddTraceContext(ctx context.Context, values map[string]any) error {
	return setTrace(ctx, "trace context", func(t *steptrace.Trace) error { return t.AddContext(values) })
}

func setTrace(ctx context.Context, what string, set func(*steptrace.Trace) error) error {
	at, err := traceOf(ctx, what)
	if err != nil {
		return err
	}
	if err := set(at.hb.cj.trace); err != nil {
		return fmt.Errorf("queuety: %s: %w", what, err)
	}
	return nil
}

// stepOutput converts a step handler's output to the object the engine
// records, taking the reserved TraceOutputKey out of it into the attempt's
// trace (see steptrace.Trace.TakeOutput).
func stepOutput(r *Result) (*phpjson.Object, error) {
	out, err := workflowstate.UserObject("step output", r.Output)
	if err != nil {
		return nil, err
	}
	r.Claimed.trace.TakeOutput(out)
	return out, nil
}

// tracedArtifacts returns the JSON list of the artifacts the attempt
// stored, or nil (SQL NULL) when it stored none.
func (cj *Claimed) tracedArtifacts() []byte { return cj.trace.Artifacts() }

// traceCompleted applies the attempt's trace to its step_completed (or
// step_branch_completed) event.
func (cj *Claimed) traceCompleted(ev *driver.WorkflowEvent) { cj.trace.Completed(ev) }

// traceItemCompleted applies the trace to a for-each branch's
// step_item_completed event, after the item's context.
func (cj *Claimed) traceItemCompleted(ev *driver.WorkflowEvent, itemCtx *phpjson.Object) {
	cj.trace.ItemCompleted(ev, itemCtx)
}

// traceFailed applies the trace to a step_failed event.
func (cj *Claimed) traceFailed(ev *driver.WorkflowEvent) { cj.trace.Failed(ev) }

// StreamChunk stores the next chunk of the streaming step running in ctx
// at once, in its own transaction (Queuety's StreamingStep yield and
// ChunkStore::append_chunk), and sends a heartbeat with the chunk count.
// Chunk indexes follow those a failed earlier attempt stored.
func StreamChunk(ctx context.Context, content string) error {
	at, err := traceOf(ctx, "stream chunk")
	if err != nil {
		return err
	}
	cj, e := at.hb.cj, at.hb.e
	c := &driver.Chunk{JobID: cj.Job.ID, WorkflowID: cj.Job.WorkflowID, StepIndex: ptr(*cj.Job.StepIndex),
		Content: content, CreatedAt: e.clock.Now()}
	n, err := cj.trace.Stream(ctx, e.store, c)
	if err != nil {
		return err
	}
	return Heartbeat(ctx, map[string]any{"streaming_chunks": n})
}

// StreamedChunks returns the chunks the streaming step running in ctx has
// stored so far, by index: those of earlier attempts that failed or were
// interrupted, then this attempt's (Queuety's $existing_chunks).
func StreamedChunks(ctx context.Context) ([]string, error) {
	at, err := traceOf(ctx, "streamed chunks")
	if err != nil {
		return nil, err
	}
	return at.hb.cj.trace.Streamed(ctx, at.hb.e.store, at.hb.cj.Job.ID)
}

// beforeRecord prepares a successful streaming attempt's trace before its
// result is recorded: one reference per stored chunk (see
// steptrace.Trace.ReferenceChunks). A failed count fails the result.
func (e *Engine) beforeRecord(ctx context.Context, r *Result) {
	if r.Claimed.trace == nil || r.Err != nil || !r.Claimed.IsStep() {
		return
	}
	if err := r.Claimed.trace.ReferenceChunks(ctx, e.store, r.Claimed.Job); err != nil {
		r.Err = err
	}
}

// afterRecord deletes a streaming step's chunks once its completion has
// committed (Queuety's ChunkStore::clear_chunks): the step's output is the
// durable record. A failed or stale attempt keeps them for the next one.
func (e *Engine) afterRecord(ctx context.Context, r *Result, err error) {
	t := r.Claimed.trace
	if t == nil || err != nil || r.Err != nil || r.Outcome != observe.OutcomeCompleted {
		return
	}
	if !t.EndStream() {
		return
	}
	id := r.Claimed.Job.ID
	if err := steptrace.ClearChunks(ctx, e.store, id); err != nil {
		e.log.Warn("queuety: clear chunks of a completed streaming step", slog.Int64("job_id", id), slog.Any("error", err))
	}
}
