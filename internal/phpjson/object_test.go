package phpjson_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/internal/phpjson"
)

func TestObjectBasics(t *testing.T) {
	o := phpjson.NewObject()
	if o.Len() != 0 || len(o.Keys()) != 0 {
		t.Fatal("new object not empty")
	}
	o.Set("b", 1)
	o.Set("a", 2)
	o.Set("c", 3)
	o.Set("b", 4) // existing key keeps its position
	if got, want := o.Keys(), []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys = %q, want %q", got, want)
	}
	if v, ok := o.Get("b"); !ok || v != 4 {
		t.Fatalf("Get(b) = %v, %v", v, ok)
	}
	if v, ok := o.Get("missing"); ok || v != nil {
		t.Fatalf("Get(missing) = %v, %v", v, ok)
	}
	if o.Len() != 3 {
		t.Fatalf("Len = %d", o.Len())
	}

	keys := o.Keys()
	keys[0] = "changed"
	if o.Keys()[0] != "b" {
		t.Fatal("Keys did not return a copy")
	}

	o.Delete("a")
	o.Delete("missing")
	if got, want := o.Keys(), []string{"b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after Delete: Keys = %q, want %q", got, want)
	}
	o.Set("a", 5) // re-added key goes to the end
	if got, want := o.Keys(), []string{"b", "c", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after re-Set: Keys = %q, want %q", got, want)
	}
	if b, _ := phpjson.Marshal(o); string(b) != `{"b":4,"c":3,"a":5}` {
		t.Fatalf("Marshal = %s", b)
	}

	var zero phpjson.Object
	zero.Set("x", 1)
	if b, _ := phpjson.Marshal(&zero); string(b) != `{"x":1}` {
		t.Fatalf("zero value Object: %s", b)
	}

	var nilObj *phpjson.Object
	if nilObj.Len() != 0 || nilObj.Keys() != nil || nilObj.Clone() != nil || nilObj.ToMap() != nil {
		t.Fatal("nil *Object accessors")
	}
	if _, ok := nilObj.Get("x"); ok {
		t.Fatal("nil *Object Get")
	}
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
	if want := `{"inner":{"x":1},"list":[{"y":2},"s"],"n":3}`; string(b) != want {
		t.Fatalf("clone changed with the original: %s, want %s", b, want)
	}
	c.Set("n", 9)
	if v, _ := o.Get("n"); v != 4 {
		t.Fatal("original changed with the clone")
	}
}

func TestObjectToMapAndFromMap(t *testing.T) {
	o := obj("b", obj("y", 1, "x", 2), "a", []any{obj("k", "v"), 1})
	m := o.ToMap()
	want := map[string]any{
		"b": map[string]any{"y": 1, "x": 2},
		"a": []any{map[string]any{"k": "v"}, 1},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("ToMap = %#v", m)
	}

	back := phpjson.ObjectFromMap(m)
	if b, _ := phpjson.Marshal(back); string(b) != `{"a":[{"k":"v"},1],"b":{"x":2,"y":1}}` {
		t.Fatalf("ObjectFromMap sorted = %s", b)
	}
	nested, _ := back.Get("b")
	if _, ok := nested.(*phpjson.Object); !ok {
		t.Fatalf("nested map not converted: %T", nested)
	}
	list, _ := back.Get("a")
	if _, ok := list.([]any)[0].(*phpjson.Object); !ok {
		t.Fatalf("map inside list not converted: %T", list.([]any)[0])
	}
	// The input map is not modified.
	if _, ok := m["a"].([]any)[0].(map[string]any); !ok {
		t.Fatal("ObjectFromMap modified its input")
	}

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
		if got := phpjson.ObjectFromMap(tt.in).Keys(); !reflect.DeepEqual(got, tt.keys) {
			t.Errorf("ObjectFromMap(%v).Keys() = %q, want %q", tt.in, got, tt.keys)
		}
	}
}

func TestObjectJSONInterfaces(t *testing.T) {
	o := obj("url", "a/b", "n", 1.0)
	b, err := o.MarshalJSON()
	if err != nil || string(b) != `{"url":"a\/b","n":1}` {
		t.Fatalf("MarshalJSON = %s, %v", b, err)
	}

	var u phpjson.Object
	if err := u.UnmarshalJSON([]byte(`{"z":1,"a":{"k":[]}}`)); err != nil {
		t.Fatal(err)
	}
	if got := u.Keys(); !reflect.DeepEqual(got, []string{"z", "a"}) {
		t.Fatalf("UnmarshalJSON keys %q", got)
	}
	if err := u.UnmarshalJSON([]byte(`["p","q"]`)); err != nil {
		t.Fatal(err)
	}
	if got := u.Keys(); !reflect.DeepEqual(got, []string{"0", "1"}) {
		t.Fatalf("UnmarshalJSON list keys %q", got)
	}
	if err := u.UnmarshalJSON([]byte(` null `)); err != nil || u.Len() != 2 {
		t.Fatalf("UnmarshalJSON(null) = %v, len %d; want no-op", err, u.Len())
	}
	err = u.UnmarshalJSON([]byte(`"s"`))
	if err == nil || !strings.Contains(err.Error(), "expected a JSON object, got string") {
		t.Fatalf("UnmarshalJSON(string) error = %v", err)
	}

	// Through encoding/json.
	var holder struct {
		State *phpjson.Object `json:"state"`
		Other phpjson.Object  `json:"other"`
	}
	if err := json.Unmarshal([]byte(`{"state":{"b":1,"a":2},"other":[]}`), &holder); err != nil {
		t.Fatal(err)
	}
	if got := holder.State.Keys(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Fatalf("encoding/json Unmarshal keys %q", got)
	}
	out, err := json.Marshal(&holder)
	if err != nil || string(out) != `{"state":{"b":1,"a":2},"other":[]}` {
		t.Fatalf("encoding/json Marshal = %s, %v", out, err)
	}
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
			if err != nil {
				t.Fatal(err)
			}
			if p := plain(got); !reflect.DeepEqual(p, tt.want) {
				t.Fatalf("Normalize = %#v, want %#v", p, tt.want)
			}
		})
	}

	// Generic trees pass through without copying.
	o := obj("a", int64(1), "b", []any{"x", obj("c", true)})
	if got, _ := phpjson.Normalize(o); got != any(o) {
		t.Error("generic *Object was copied")
	}
	l := []any{int64(1), "x"}
	if got, _ := phpjson.Normalize(l); &got.([]any)[0] != &l[0] {
		t.Error("generic []any was copied")
	}
	// A container needing conversion is copied, not modified.
	o2 := obj("a", 1, "b", "x")
	n, _ := phpjson.Normalize(o2)
	if n == any(o2) {
		t.Error("converted *Object is the input")
	}
	if v, _ := o2.Get("a"); v != 1 {
		t.Error("Normalize modified its input")
	}
	if v, _ := n.(*phpjson.Object).Get("a"); v != int64(1) {
		t.Errorf("converted value %#v", v)
	}

	if _, err := phpjson.Normalize(json.Number("x")); err == nil {
		t.Error("invalid json.Number: want error")
	}
	if _, err := phpjson.Normalize(struct{ S string }{"\xff"}); err == nil {
		t.Error("invalid UTF-8 in struct: want error")
	}
}
