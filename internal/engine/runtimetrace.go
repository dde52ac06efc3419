package engine

// This file holds what a step attempt adds to its events beyond its state:
// the runtime trace metadata (Queuety's trace_input, trace_output,
// trace_context and the reserved "_queuety_trace" output key) and the
// chunks of a streaming step (Queuety's StreamingStep and ChunkStore).

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// TraceOutputKey is the reserved step-output key whose value is trace
// metadata for the step's events, never merged into the state.
const TraceOutputKey = "_queuety_trace"

// runtimeTrace is Queuety's ExecutionContext trace buffer for one attempt.
// Its fields are guarded by the artifactTrace mutex that holds it.
type runtimeTrace struct {
	input, output       any
	hasInput, hasOutput bool
	context             *phpjson.Object // nil until a value is added
	artifacts           []any           // from the reserved output key
	chunks              []any           // chunk references
	absorbed            bool            // the reserved output key was read

	// Streaming: streaming is set once the attempt streamed or read its
	// chunks; next is the index of its next chunk.
	streaming, loaded, referenced bool
	next                          int
}

// traceOf returns the attempt running in ctx, or an error naming what.
func traceOf(ctx context.Context, what string) (*attemptCtx, error) {
	at, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return nil, fmt.Errorf("queuety: %s: %w", what, ErrNoAttempt)
	}
	if at.info.WorkflowID == 0 || at.info.StepIndex < 0 {
		return nil, fmt.Errorf("queuety: %s: job %d: %w", what, at.info.JobID, ErrNoWorkflowStep)
	}
	if at.hb.cj.artifacts == nil {
		return nil, fmt.Errorf("queuety: %s: job %d is not traced", what, at.info.JobID)
	}
	return at, nil
}

// SetTraceInput sets the input the running step's events record
// (Queuety's trace_input). Only a JSON object or list replaces the input
// of a step_completed or step_failed event, as in Queuety.
func SetTraceInput(ctx context.Context, input any) error {
	return setTrace(ctx, "trace input", input, func(rt *runtimeTrace, v any) { rt.input, rt.hasInput = v, true })
}

// SetTraceOutput sets the output the running step's completion event
// records (Queuety's trace_output) instead of the step's output; only a
// JSON object or list does.
func SetTraceOutput(ctx context.Context, output any) error {
	return setTrace(ctx, "trace output", output, func(rt *runtimeTrace, v any) { rt.output, rt.hasOutput = v, true })
}

// AddTraceContext merges values into the context the running step's
// events record (Queuety's trace_context); keys go in sorted order and a
// later value replaces an earlier one.
func AddTraceContext(ctx context.Context, values map[string]any) error {
	return setTrace(ctx, "trace context", values, func(rt *runtimeTrace, v any) { rt.mergeContext(v) })
}

func setTrace(ctx context.Context, what string, v any, set func(*runtimeTrace, any)) error {
	at, err := traceOf(ctx, what)
	if err != nil {
		return err
	}
	n, err := phpjson.Normalize(v)
	if err != nil {
		return fmt.Errorf("queuety: %s: %w", what, invalidf("%s does not encode as JSON: %v", what, err))
	}
	t := at.hb.cj.artifacts
	t.mu.Lock()
	defer t.mu.Unlock()
	set(&t.runtimeTrace, n)
	return nil
}

func (rt *runtimeTrace) mergeContext(v any) {
	o := stringKeyed(v)
	if o == nil {
		return
	}
	if rt.context == nil {
		rt.context = phpjson.NewObject()
	}
	for _, k := range o.Keys() {
		val, _ := o.Get(k)
		rt.context.Set(k, val)
	}
}

// stringKeyed returns the string-keyed entries of what PHP's is_array
// accepts (Queuety's ensure_string_keys): an object as it is, a list as an
// empty object (its keys are integers), and nil for anything else.
func stringKeyed(v any) *phpjson.Object {
	switch o := v.(type) {
	case *phpjson.Object:
		return o
	case []any:
		return phpjson.NewObject()
	}
	return nil
}

// stepOutput converts a step handler's output to the object the engine
// records, taking the reserved TraceOutputKey out of it into the attempt's
// trace (Queuety's extract_trace_from_step_output). The trace is taken
// once per attempt, however often the output is converted.
func stepOutput(r *Result) (*phpjson.Object, error) {
	out, err := workflowstate.UserObject("step output", r.Output)
	if err != nil {
		return nil, err
	}
	raw, ok := out.Get(TraceOutputKey)
	if !ok {
		return out, nil
	}
	out.Delete(TraceOutputKey)
	t := r.Claimed.artifacts
	if t == nil {
		return out, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rt := &t.runtimeTrace
	if rt.absorbed {
		return out, nil
	}
	rt.absorbed = true
	tr, ok := raw.(*phpjson.Object)
	if !ok {
		return out, nil
	}
	if v, ok := tr.Get("input"); ok {
		rt.input, rt.hasInput = v, true
	}
	if v, ok := tr.Get("output"); ok {
		rt.output, rt.hasOutput = v, true
	}
	if v, ok := tr.Get("context"); ok {
		rt.mergeContext(v)
	}
	for _, list := range []struct {
		key string
		to  *[]any
	}{{"artifacts", &rt.artifacts}, {"chunks", &rt.chunks}} {
		v, _ := tr.Get(list.key)
		switch l := v.(type) {
		case []any:
			for _, e := range l {
				if o := stringKeyed(e); o != nil {
					*list.to = append(*list.to, o)
				}
			}
		case *phpjson.Object:
			for _, k := range l.Keys() {
				e, _ := l.Get(k)
				if o := stringKeyed(e); o != nil {
					*list.to = append(*list.to, o)
				}
			}
		}
	}
	return out, nil
}

// isArray reports whether v is what PHP's is_array accepts: a JSON object
// or list.
func isArray(v any) bool {
	_, obj := v.(*phpjson.Object)
	return obj || workflowstate.IsList(v)
}

// traceCompleted applies the attempt's runtime trace to its step_completed
// (or step_branch_completed) event, as Queuety's record_step_completed
// call does: an object or list input or output replaces the event's, the
// context is the trace context, and the chunks are the trace's.
func (cj *Claimed) traceCompleted(ev *driver.WorkflowEvent) {
	t := cj.artifacts
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rt := &t.runtimeTrace
	if rt.hasInput && isArray(rt.input) {
		ev.Input = workflowstate.EncodeJSON(rt.input)
	}
	if rt.hasOutput && isArray(rt.output) {
		ev.Output = workflowstate.EncodeJSON(rt.output)
	}
	if rt.context != nil {
		ev.Context = workflowstate.EncodeJSON(rt.context)
	}
	if len(rt.chunks) > 0 {
		ev.Chunks = workflowstate.EncodeJSON(rt.chunks)
	}
}

// traceItemCompleted applies the trace to a for-each branch's
// step_item_completed event, as Queuety's record_step_item_completed call
// does: any input set replaces the event's, the context is the item's
// followed by the trace context.
func (cj *Claimed) traceItemCompleted(ev *driver.WorkflowEvent, itemCtx *phpjson.Object) {
	t := cj.artifacts
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rt := &t.runtimeTrace
	if rt.hasInput && rt.input != nil {
		ev.Input = workflowstate.EncodeJSON(rt.input)
	}
	if rt.hasOutput && isArray(rt.output) {
		ev.Output = workflowstate.EncodeJSON(rt.output)
	}
	if rt.context != nil {
		for _, k := range rt.context.Keys() {
			v, _ := rt.context.Get(k)
			itemCtx.Set(k, v)
		}
		ev.Context = workflowstate.EncodeJSON(itemCtx)
	}
	if len(rt.chunks) > 0 {
		ev.Chunks = workflowstate.EncodeJSON(rt.chunks)
	}
}

// traceFailed applies the trace to a step_failed event, as Queuety's
// worker does: an object or list input replaces the event's, and the
// context is the event's own merged with the trace context.
func (cj *Claimed) traceFailed(ev *driver.WorkflowEvent) {
	t := cj.artifacts
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rt := &t.runtimeTrace
	if rt.hasInput && isArray(rt.input) {
		ev.Input = workflowstate.EncodeJSON(rt.input)
	}
	if rt.context != nil {
		merged := phpjson.NewObject()
		if base, err := phpjson.Decode(ev.Context); err == nil {
			if o, ok := base.(*phpjson.Object); ok {
				merged = o
			}
		}
		for _, k := range rt.context.Keys() {
			v, _ := rt.context.Get(k)
			merged.Set(k, v)
		}
		ev.Context = workflowstate.EncodeJSON(merged)
	}
}

// tracedExtraArtifacts returns the artifact references the reserved
// output key added; the caller holds t.mu.
func (t *artifactTrace) tracedExtraArtifacts() []any { return t.runtimeTrace.artifacts }

// StreamChunk stores the next chunk of the streaming step running in ctx
// at once, in its own transaction (Queuety's StreamingStep yield and
// ChunkStore::append_chunk), and sends a heartbeat with the chunk count.
// Chunk indexes follow those a failed earlier attempt stored.
func StreamChunk(ctx context.Context, content string) error {
	at, err := traceOf(ctx, "stream chunk")
	if err != nil {
		return err
	}
	if !utf8.ValidString(content) {
		return fmt.Errorf("queuety: stream chunk: %w", invalidf("chunk content is not valid UTF-8"))
	}
	cj, e := at.hb.cj, at.hb.e
	t := cj.artifacts
	t.mu.Lock()
	if err := e.loadStream(ctx, cj, &t.runtimeTrace); err != nil {
		t.mu.Unlock()
		return err
	}
	c := &driver.Chunk{JobID: cj.Job.ID, WorkflowID: cj.Job.WorkflowID, StepIndex: ptr(*cj.Job.StepIndex),
		ChunkIndex: t.runtimeTrace.next, Content: content, CreatedAt: e.clock.Now()}
	err = e.store.InTx(ctx, func(tx driver.Tx) error { return tx.ChunkInsert(ctx, c) })
	if err == nil {
		t.runtimeTrace.next++
	}
	n := t.runtimeTrace.next
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("queuety: stream chunk %d of job %d: %w", c.ChunkIndex, c.JobID, err)
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
	cj, e := at.hb.cj, at.hb.e
	t := cj.artifacts
	t.mu.Lock()
	defer t.mu.Unlock()
	rows, err := e.listChunks(ctx, cj.Job.ID)
	if err != nil {
		return nil, err
	}
	rt := &t.runtimeTrace
	rt.streaming = true
	if !rt.loaded {
		rt.loaded, rt.next = true, len(rows)
	}
	out := make([]string, len(rows))
	for i, c := range rows {
		out[i] = c.Content
	}
	return out, nil
}

// loadStream marks the attempt as streaming and, the first time, counts
// the chunks earlier attempts stored; the caller holds the trace's mutex.
func (e *Engine) loadStream(ctx context.Context, cj *Claimed, rt *runtimeTrace) error {
	rt.streaming = true
	if rt.loaded {
		return nil
	}
	rows, err := e.listChunks(ctx, cj.Job.ID)
	if err != nil {
		return err
	}
	rt.loaded, rt.next = true, len(rows)
	return nil
}

// listChunks reads the chunks job stored, by index.
func (e *Engine) listChunks(ctx context.Context, job int64) ([]*driver.Chunk, error) {
	var rows []*driver.Chunk
	err := e.store.InTx(ctx, func(tx driver.Tx) (err error) { rows, err = tx.ChunkList(ctx, job); return err })
	if err != nil {
		return nil, fmt.Errorf("queuety: read chunks of job %d: %w", job, err)
	}
	return rows, nil
}

// beforeRecord prepares a successful streaming attempt's trace before its
// result is recorded: one reference per stored chunk, as Queuety's worker
// adds them. Queuety reads each reference's chunk_index and content from
// the chunk's text, so both are null in the rows it writes; these rows
// are written the same way.
func (e *Engine) beforeRecord(ctx context.Context, r *Result) {
	t := r.Claimed.artifacts
	if t == nil || r.Err != nil || !r.Claimed.IsStep() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rt := &t.runtimeTrace
	if !rt.streaming || rt.referenced {
		return
	}
	// The job's chunks are those earlier attempts stored, counted when
	// this attempt started streaming, and those it stored since: rt.next.
	stored := rt.next
	if !rt.loaded { // its first read failed; count them now
		rows, err := e.listChunks(ctx, r.Claimed.Job.ID)
		if err != nil {
			r.Err = err
			return
		}
		stored = len(rows)
	}
	refs := make([]any, 0, stored+len(rt.chunks))
	for range stored {
		ref := phpjson.NewObject()
		ref.Set("job_id", r.Claimed.Job.ID)
		ref.Set("workflow_id", r.Claimed.Job.WorkflowID)
		ref.Set("step_index", int64(*r.Claimed.Job.StepIndex))
		ref.Set("chunk_index", nil)
		ref.Set("content", nil)
		refs = append(refs, ref)
	}
	rt.chunks = append(refs, rt.chunks...)
	rt.referenced = true // once per attempt; the rows go after the commit
}

// afterRecord deletes a streaming step's chunks once its completion has
// committed (Queuety's ChunkStore::clear_chunks): the step's output is the
// durable record. A failed or stale attempt keeps them for the next one.
func (e *Engine) afterRecord(ctx context.Context, r *Result, err error) {
	t := r.Claimed.artifacts
	if t == nil || err != nil || r.Err != nil || r.Outcome != observe.OutcomeCompleted {
		return
	}
	t.mu.Lock()
	streaming := t.runtimeTrace.streaming
	t.runtimeTrace.streaming = false
	t.mu.Unlock()
	if !streaming {
		return
	}
	id := r.Claimed.Job.ID
	if err := e.store.InTx(ctx, func(tx driver.Tx) error { _, err := tx.ChunkDeleteJob(ctx, id); return err }); err != nil {
		e.log.Warn("queuety: clear chunks of a completed streaming step", slog.Int64("job_id", id), slog.Any("error", err))
	}
}
