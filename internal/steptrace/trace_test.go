package steptrace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

func decode(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	o, err := phpjson.DecodeObject([]byte(s))
	require.NoError(t, err)
	return o
}

// The reserved output key leaves the output every time, and fills the
// trace once per attempt: its input, output, context, artifacts and
// chunks (string-keyed entries only, from a list or an object).
func TestTakeOutput(t *testing.T) {
	tr := New()
	out := decode(t, `{"a":1,"_queuety_trace":{"input":{"i":1},"output":[1,2],"context":{"c":"x"},`+
		`"artifacts":[{"key":"k"},"skip"],"chunks":{"0":{"n":1},"1":2}}}`)
	tr.TakeOutput(out)
	assert.Equal(t, `{"a":1}`, string(mustJSON(t, out)), "the key leaves the output")

	again := decode(t, `{"_queuety_trace":{"input":{"other":1}}}`)
	tr.TakeOutput(again)
	assert.Equal(t, 0, again.Len(), "the key leaves a second conversion too")

	ev := &driver.WorkflowEvent{Input: []byte(`{"state":1}`), Output: []byte(`{"a":1}`)}
	tr.Completed(ev)
	assert.Equal(t, `{"i":1}`, string(ev.Input), "the first conversion's trace, taken once")
	assert.Equal(t, `[1,2]`, string(ev.Output))
	assert.Equal(t, `{"c":"x"}`, string(ev.Context))
	assert.Equal(t, `[{"n":1}]`, string(ev.Chunks))
	assert.Equal(t, `[{"key":"k"}]`, string(tr.Artifacts()))
}

// What a handler sets applies to each kind of event as Queuety applies
// it: a scalar input or output replaces no completion's, the for-each
// item's context comes first, and a failure's context merges into its
// own.
func TestEventsTakeTheTrace(t *testing.T) {
	tr := New()
	require.NoError(t, tr.SetInput("scalar"))
	require.NoError(t, tr.SetOutput(map[string]any{"o": 1}))
	require.NoError(t, tr.AddContext(map[string]any{"b": 2, "a": 1}))
	require.NoError(t, tr.AddContext(map[string]any{"a": 3}))

	done := &driver.WorkflowEvent{Input: []byte(`{"s":1}`)}
	tr.Completed(done)
	assert.Equal(t, `{"s":1}`, string(done.Input), "a scalar input replaces no completion's input")
	assert.Equal(t, `{"o":1}`, string(done.Output))
	assert.Equal(t, `{"a":3,"b":2}`, string(done.Context), "sorted keys, the later value wins")
	assert.Nil(t, done.Chunks)

	item := &driver.WorkflowEvent{}
	itemCtx := decode(t, `{"item_index":4}`)
	tr.ItemCompleted(item, itemCtx)
	assert.Equal(t, `"scalar"`, string(item.Input), "any input replaces an item's")
	assert.Equal(t, `{"item_index":4,"a":3,"b":2}`, string(item.Context))

	failed := &driver.WorkflowEvent{Input: []byte(`{"s":1}`), Context: []byte(`{"error":"e","a":0}`)}
	tr.Failed(failed)
	assert.Equal(t, `{"s":1}`, string(failed.Input))
	assert.Equal(t, `{"error":"e","a":3,"b":2}`, string(failed.Context))

	assert.ErrorIs(t, tr.SetInput(func() {}), driver.ErrInvalidArgument, "a value that is not JSON")
}

// Artifacts lists those stored through the artifact service, then those
// the output key listed, and is nil (SQL NULL) when there are none.
func TestArtifacts(t *testing.T) {
	tr := New()
	assert.Nil(t, tr.Artifacts())
	idx := 2
	tr.AddArtifact(&driver.Artifact{Key: "report", Kind: "json", StepIndex: &idx, Metadata: []byte(`{"m":1}`)})
	tr.AddArtifact(&driver.Artifact{Key: "note", Kind: "text"})
	tr.TakeOutput(decode(t, `{"_queuety_trace":{"artifacts":[{"key":"extra"}]}}`))
	assert.Equal(t, `[{"key":"report","kind":"json","step_index":2,"metadata":{"m":1}},`+
		`{"key":"note","kind":"text","step_index":null,"metadata":[]},{"key":"extra"}]`, string(tr.Artifacts()))
}

// A nil trace (an attempt no worker runs) records nothing and changes no
// event, but the reserved key still leaves the output.
func TestNilTrace(t *testing.T) {
	var tr *Trace
	out := decode(t, `{"a":1,"_queuety_trace":{"input":{"i":1}}}`)
	tr.TakeOutput(out)
	assert.Equal(t, `{"a":1}`, string(mustJSON(t, out)))
	tr.AddArtifact(&driver.Artifact{Key: "k"})
	assert.Nil(t, tr.Artifacts())
	ev := &driver.WorkflowEvent{Input: []byte(`{"s":1}`)}
	tr.Completed(ev)
	tr.Failed(ev)
	assert.Equal(t, `{"s":1}`, string(ev.Input))
	assert.False(t, tr.EndStream())
	assert.NoError(t, tr.ReferenceChunks(t.Context(), nil, &driver.Job{}))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := phpjson.Marshal(v)
	require.NoError(t, err)
	return b
}
