package steptrace

import (
	"fmt"
	"sync"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// OutputKey is the reserved step-output key whose value is trace
// metadata for the step's events, never merged into the state.
const OutputKey = "_queuety_trace"

// Trace is Queuety's ExecutionContext trace buffer for one step attempt:
// the artifacts it stored, the input, output and context its handler set,
// what the reserved output key added, and its streamed chunks. It is safe
// for concurrent use. A nil *Trace (an attempt that is not traced, as one
// no worker runs) records nothing and changes no event.
type Trace struct {
	mu        sync.Mutex
	artifacts []any // references of the artifacts the attempt stored

	input, output       any
	hasInput, hasOutput bool
	context             *phpjson.Object // nil until a value is added
	extra               []any           // artifacts from the reserved output key
	chunks              []any           // chunk references
	absorbed            bool            // the reserved output key was read

	// Streaming: streaming is set once the attempt streamed or read its
	// chunks; next is the index of its next chunk.
	streaming, loaded, referenced bool
	next                          int
}

// New returns an empty trace for one attempt.
func New() *Trace { return &Trace{} }

// SetInput sets the input the step's events record (Queuety's
// trace_input). Only a JSON object or list replaces the input of a
// step_completed or step_failed event, as in Queuety.
func (t *Trace) SetInput(input any) error {
	return t.set("trace input", input, func(v any) { t.input, t.hasInput = v, true })
}

// SetOutput sets the output the step's completion event records
// (Queuety's trace_output) instead of the step's output; only a JSON
// object or list does.
func (t *Trace) SetOutput(output any) error {
	return t.set("trace output", output, func(v any) { t.output, t.hasOutput = v, true })
}

// AddContext merges values into the context the step's events record
// (Queuety's trace_context); keys go in sorted order and a later value
// replaces an earlier one.
func (t *Trace) AddContext(values map[string]any) error {
	return t.set("trace context", values, t.mergeContext)
}

// set normalizes v and hands it to apply under the lock. A value that
// does not encode as JSON is an error wrapping driver.ErrInvalidArgument.
func (t *Trace) set(what string, v any, apply func(any)) error {
	n, err := phpjson.Normalize(v)
	if err != nil {
		return fmt.Errorf("%w: %s does not encode as JSON: %v", driver.ErrInvalidArgument, what, err)
	}
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	apply(n)
	return nil
}

// mergeContext merges the string-keyed entries of v into the context;
// the caller holds t.mu.
func (t *Trace) mergeContext(v any) {
	o := stringKeyed(v)
	if o == nil {
		return
	}
	if t.context == nil {
		t.context = phpjson.NewObject()
	}
	for _, k := range o.Keys() {
		val, _ := o.Get(k)
		t.context.Set(k, val)
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

// TakeOutput takes the reserved OutputKey out of a step's output object
// into the trace (Queuety's extract_trace_from_step_output): its input,
// output and context, and the artifacts and chunks it lists. The trace
// takes it once per attempt, however often the output is converted; the
// key leaves out every time.
func (t *Trace) TakeOutput(out *phpjson.Object) {
	raw, ok := out.Get(OutputKey)
	if !ok {
		return
	}
	out.Delete(OutputKey)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.absorbed {
		return
	}
	t.absorbed = true
	tr, ok := raw.(*phpjson.Object)
	if !ok {
		return
	}
	if v, ok := tr.Get("input"); ok {
		t.input, t.hasInput = v, true
	}
	if v, ok := tr.Get("output"); ok {
		t.output, t.hasOutput = v, true
	}
	if v, ok := tr.Get("context"); ok {
		t.mergeContext(v)
	}
	for _, list := range []struct {
		key string
		to  *[]any
	}{{"artifacts", &t.extra}, {"chunks", &t.chunks}} {
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
}

// AddArtifact records an artifact the attempt stored, as Queuety's trace
// lists it: key, kind, step index and metadata.
func (t *Trace) AddArtifact(a *driver.Artifact) {
	if t == nil {
		return
	}
	ref := phpjson.NewObject()
	ref.Set("key", a.Key)
	ref.Set("kind", a.Kind)
	if a.StepIndex != nil {
		ref.Set("step_index", int64(*a.StepIndex))
	} else {
		ref.Set("step_index", nil)
	}
	meta, err := phpjson.Decode(a.Metadata)
	if err != nil {
		meta = []any{}
	}
	ref.Set("metadata", meta)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.artifacts = append(t.artifacts, ref)
}

// Artifacts returns the JSON list of the artifacts the attempt stored,
// then those the reserved output key listed, or nil (SQL NULL) when there
// are none.
func (t *Trace) Artifacts() []byte {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	refs := append(append([]any{}, t.artifacts...), t.extra...)
	if len(refs) == 0 {
		return nil
	}
	return workflowstate.EncodeJSON(refs)
}

// isArray reports whether v is what PHP's is_array accepts: a JSON object
// or list.
func isArray(v any) bool {
	_, obj := v.(*phpjson.Object)
	return obj || workflowstate.IsList(v)
}

// Completed applies the trace to the attempt's step_completed (or
// step_branch_completed) event, as Queuety's record_step_completed call
// does: an object or list input or output replaces the event's, the
// context is the trace context, and the chunks are the trace's.
func (t *Trace) Completed(ev *driver.WorkflowEvent) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hasInput && isArray(t.input) {
		ev.Input = workflowstate.EncodeJSON(t.input)
	}
	if t.hasOutput && isArray(t.output) {
		ev.Output = workflowstate.EncodeJSON(t.output)
	}
	if t.context != nil {
		ev.Context = workflowstate.EncodeJSON(t.context)
	}
	if len(t.chunks) > 0 {
		ev.Chunks = workflowstate.EncodeJSON(t.chunks)
	}
}

// ItemCompleted applies the trace to a for-each branch's
// step_item_completed event, as Queuety's record_step_item_completed call
// does: any input set replaces the event's, the context is the item's
// (itemCtx, which it extends) followed by the trace context.
func (t *Trace) ItemCompleted(ev *driver.WorkflowEvent, itemCtx *phpjson.Object) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hasInput && t.input != nil {
		ev.Input = workflowstate.EncodeJSON(t.input)
	}
	if t.hasOutput && isArray(t.output) {
		ev.Output = workflowstate.EncodeJSON(t.output)
	}
	if t.context != nil {
		for _, k := range t.context.Keys() {
			v, _ := t.context.Get(k)
			itemCtx.Set(k, v)
		}
		ev.Context = workflowstate.EncodeJSON(itemCtx)
	}
	if len(t.chunks) > 0 {
		ev.Chunks = workflowstate.EncodeJSON(t.chunks)
	}
}

// Failed applies the trace to a step_failed event, as Queuety's worker
// does: an object or list input replaces the event's, and the context is
// the event's own merged with the trace context.
func (t *Trace) Failed(ev *driver.WorkflowEvent) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hasInput && isArray(t.input) {
		ev.Input = workflowstate.EncodeJSON(t.input)
	}
	if t.context != nil {
		merged := phpjson.NewObject()
		if base, err := phpjson.Decode(ev.Context); err == nil {
			if o, ok := base.(*phpjson.Object); ok {
				merged = o
			}
		}
		for _, k := range t.context.Keys() {
			v, _ := t.context.Get(k)
			merged.Set(k, v)
		}
		ev.Context = workflowstate.EncodeJSON(merged)
	}
}
