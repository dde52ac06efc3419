package phpjson_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

func TestObjectBasics(t *testing.T) {
	o := phpjson.NewObject()
	assert.Zero(t, o.Len(), "new object Len")
	assert.Empty(t, o.Keys(), "new object Keys")
	o.Set("b", 1)
	o.Set("a", 2)
	o.Set("c", 3)
	o.Set("b", 4) // existing key keeps its position
	assert.Equal(t, []string{"b", "a", "c"}, o.Keys())
	v, ok := o.Get("b")
	assert.True(t, ok, "Get(b) found nothing")
	assert.Equal(t, 4, v, "Get(b)")
	v, ok = o.Get("missing")
	assert.False(t, ok, "Get(missing) found a value")
	assert.Nil(t, v, "Get(missing)")
	assert.Equal(t, 3, o.Len())

	keys := o.Keys()
	keys[0] = "changed"
	assert.Equal(t, "b", o.Keys()[0], "Keys did not return a copy")

	o.Delete("a")
	o.Delete("missing")
	assert.Equal(t, []string{"b", "c"}, o.Keys(), "after Delete")
	o.Set("a", 5) // re-added key goes to the end
	assert.Equal(t, []string{"b", "c", "a"}, o.Keys(), "after re-Set")
	b, _ := phpjson.Marshal(o)
	assert.Equal(t, `{"b":4,"c":3,"a":5}`, string(b), "Marshal")

	var zero phpjson.Object
	zero.Set("x", 1)
	b, _ = phpjson.Marshal(&zero)
	assert.Equal(t, `{"x":1}`, string(b), "zero value Object")

	var nilObj *phpjson.Object
	assert.Zero(t, nilObj.Len(), "nil *Object Len")
	assert.Nil(t, nilObj.Keys(), "nil *Object Keys")
	assert.Nil(t, nilObj.Clone(), "nil *Object Clone")
	assert.Nil(t, nilObj.ToMap(), "nil *Object ToMap")
	_, ok = nilObj.Get("x")
	assert.False(t, ok, "nil *Object Get")
	nilObj.Delete("x")
}

func TestObjectClone(t *testing.T) {
	inner := obj("x", 1)
	list := []any{obj("y", 2), "s"}
	o := obj("inner", inner, "list", list, "n", 3)
	c := o.Clone()

	inner.Set("x", 100)
	inner.Set("new", true)
	list[0].(*phpjson.Object).Set("y", 200)
	list[1] = "changed"
	o.Set("n", 4)
	o.Set("added", 1)

	b, _ := phpjson.Marshal(c)
	assert.Equal(t, `{"inner":{"x":1},"list":[{"y":2},"s"],"n":3}`, string(b), "clone changed with the original")
	c.Set("n", 9)
	v, _ := o.Get("n")
	assert.Equal(t, 4, v, "original changed with the clone")
}

func TestObjectToMapAndFromMap(t *testing.T) {
	o := obj("b", obj("y", 1, "x", 2), "a", []any{obj("k", "v"), 1})
	m := o.ToMap()
	want := map[string]any{
		"b": map[string]any{"y": 1, "x": 2},
		"a": []any{map[string]any{"k": "v"}, 1},
	}
	assert.Equal(t, want, m, "ToMap")

	back := phpjson.ObjectFromMap(m)
	b, _ := phpjson.Marshal(back)
	assert.Equal(t, `{"a":[{"k":"v"},1],"b":{"x":2,"y":1}}`, string(b), "ObjectFromMap sorted")
	nested, _ := back.Get("b")
	assert.IsType(t, &phpjson.Object{}, nested, "nested map not converted")
	list, _ := back.Get("a")
	assert.IsType(t, &phpjson.Object{}, list.([]any)[0], "map inside list not converted")
	// The input map is not modified.
	assert.IsType(t, map[string]any{}, m["a"].([]any)[0], "ObjectFromMap modified its input")

	tests := []struct {
		in   map[string]any
		keys []string
	}{
		{map[string]any{"10": 1, "9": 1, "-2": 1, "0": 1}, []string{"-2", "0", "9", "10"}},
		{map[string]any{"10": 1, "9": 1, "x": 1}, []string{"10", "9", "x"}},
		{map[string]any{"b": 1, "a": 1, "B": 1, "é": 1, "": 1}, []string{"", "B", "a", "b", "é"}},
		{map[string]any{"007": 1, "7": 1}, []string{"007", "7"}},
		{map[string]any{"-0": 1, "0": 1}, []string{"-0", "0"}},
		{map[string]any{"9223372036854775808": 1, "1": 1}, []string{"1", "9223372036854775808"}},
		{map[string]any{"9223372036854775807": 1, "-9223372036854775808": 1}, []string{"-9223372036854775808", "9223372036854775807"}},
		{nil, []string{}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.keys, phpjson.ObjectFromMap(tt.in).Keys(), "ObjectFromMap(%v).Keys()", tt.in)
	}
}

func TestObjectJSONInterfaces(t *testing.T) {
	o := obj("url", "a/b", "n", 1.0)
	b, err := o.MarshalJSON()
	require.NoError(t, err, "MarshalJSON")
	assert.Equal(t, `{"url":"a\/b","n":1}`, string(b), "MarshalJSON")

	var u phpjson.Object
	require.NoError(t, u.UnmarshalJSON([]byte(`{"z":1,"a":{"k":[]}}`)))
	assert.Equal(t, []string{"z", "a"}, u.Keys(), "UnmarshalJSON keys")
	require.NoError(t, u.UnmarshalJSON([]byte(`["p","q"]`)))
	assert.Equal(t, []string{"0", "1"}, u.Keys(), "UnmarshalJSON list keys")
	assert.NoError(t, u.UnmarshalJSON([]byte(` null `)), "UnmarshalJSON(null)")
	assert.Equal(t, 2, u.Len(), "UnmarshalJSON(null) must be a no-op")
	err = u.UnmarshalJSON([]byte(`"s"`))
	assert.ErrorContains(t, err, "expected a JSON object, got string", "UnmarshalJSON(string)")

	// Through encoding/json.
	var holder struct {
		State *phpjson.Object `json:"state"`
		Other phpjson.Object  `json:"other"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"state":{"b":1,"a":2},"other":[]}`), &holder))
	assert.Equal(t, []string{"b", "a"}, holder.State.Keys(), "encoding/json Unmarshal keys")
	out, err := json.Marshal(&holder)
	require.NoError(t, err, "encoding/json Marshal")
	assert.Equal(t, `{"state":{"b":1,"a":2},"other":[]}`, string(out), "encoding/json Marshal")
}

func TestNormalize(t *testing.T) {
	type Step struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Class string `json:"class,omitempty"`
	}
	type myMap map[string]int
	tests := []struct {
		name string
		in   any
		want any // compared after plain()
	}{
		{"nil", nil, nil},
		{"string", "x", "x"},
		{"int", 3, int64(3)},
		{"uint32", uint32(3), int64(3)},
		{"big uint64", uint64(1 << 63), float64(1 << 63)},
		{"float32", float32(0.1), 0.1},
		{"json.Number int", json.Number("9007199254740993"), int64(9007199254740993)},
		{"json.Number float", json.Number("2.5"), 2.5},
		{"struct field order", Step{"single", "0", "App\\Steps\\FetchOrder"},
			map[string]any{"__keys": []string{"type", "name", "class"}, "type": "single", "name": "0", "class": "App\\Steps\\FetchOrder"}},
		{"slice of structs", []Step{{Type: "delay", Name: "d"}},
			[]any{map[string]any{"__keys": []string{"type", "name"}, "type": "delay", "name": "d"}}},
		{"named map", myMap{"b": 1, "a": 2}, map[string]any{"__keys": []string{"a", "b"}, "a": int64(1 + 1), "b": int64(1)}},
		{"map[string]any", map[string]any{"y": []int{1}, "x": nil},
			map[string]any{"__keys": []string{"x", "y"}, "x": nil, "y": []any{int64(1)}}},
		{"nil slice", []int(nil), []any{}},
		{"raw message", json.RawMessage(`{"b":1,"a":2}`), map[string]any{"__keys": []string{"b", "a"}, "b": int64(1), "a": int64(2)}},
		{"object with typed values", obj("n", 1, "l", []string{"a"}),
			map[string]any{"__keys": []string{"n", "l"}, "n": int64(1), "l": []any{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := phpjson.Normalize(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, plain(got), "Normalize")
		})
	}

	// Generic trees pass through without copying.
	o := obj("a", int64(1), "b", []any{"x", obj("c", true)})
	got, _ := phpjson.Normalize(o)
	assert.Same(t, o, got, "generic *Object was copied")
	l := []any{int64(1), "x"}
	got, _ = phpjson.Normalize(l)
	assert.Same(t, &l[0], &got.([]any)[0], "generic []any was copied")
	// A container needing conversion is copied, not modified.
	o2 := obj("a", 1, "b", "x")
	n, _ := phpjson.Normalize(o2)
	assert.NotSame(t, o2, n, "converted *Object is the input")
	v, _ := o2.Get("a")
	assert.Equal(t, 1, v, "Normalize modified its input")
	v, _ = n.(*phpjson.Object).Get("a")
	assert.Equal(t, int64(1), v, "converted value")

	_, err := phpjson.Normalize(json.Number("x"))
	assert.Error(t, err, "invalid json.Number")
	_, err = phpjson.Normalize(struct{ S string }{"\xff"})
	assert.Error(t, err, "invalid UTF-8 in struct")
}
