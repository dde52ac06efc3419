package engine

import (
	"reflect"
	"testing"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// Every handler sharing a batch's public state gets a copy of its own:
// what one changes, at any depth, neither the others nor the shared tree
// see, whether a value is a flat list, a flat map or a nested one.
func TestHandlerStatesAreIndependent(t *testing.T) {
	state, err := phpjson.DecodeObject([]byte(`{"items":[1,2,3],"opts":{"a":1},"tree":{"l":[1,{"x":1}]},"n":7,"_private":1}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &publicState{users: 2}
	a, b := p.handlerState(state), p.handlerState(state)
	want := map[string]any{
		"items": []any{int64(1), int64(2), int64(3)},
		"opts":  map[string]any{"a": int64(1)},
		"tree":  map[string]any{"l": []any{int64(1), map[string]any{"x": int64(1)}}},
		"n":     int64(7),
	}
	if !reflect.DeepEqual(map[string]any(a), want) {
		t.Fatalf("handler state = %#v, want %#v", a, want)
	}
	a["items"].([]any)[0] = "changed"
	a["opts"].(map[string]any)["a"] = "changed"
	a["tree"].(map[string]any)["l"].([]any)[1].(map[string]any)["x"] = "changed"
	a["n"] = "changed"
	if !reflect.DeepEqual(map[string]any(b), want) {
		t.Fatalf("another handler's state changed with the first's: %#v", b)
	}
	if !reflect.DeepEqual(p.plain, want) {
		t.Fatalf("the shared state changed with a handler's: %#v", p.plain)
	}
	if c := p.handlerState(state); !reflect.DeepEqual(map[string]any(c), want) {
		t.Fatalf("a later handler's state = %#v, want %#v", c, want)
	}
}

// BenchmarkHandlerStateItems is a branch handler's copy of the public
// state of a 10,000-item for-each (a list of integers).
func BenchmarkHandlerStateItems(b *testing.B) {
	list := make([]any, 10000)
	for i := range list {
		list[i] = int64(i)
	}
	state := phpjson.NewObject()
	state.Set("items", list)
	state.Set("name", "bench")
	p := &publicState{users: 2}
	p.handlerState(state)
	b.ReportAllocs()
	for b.Loop() {
		p.handlerState(state)
	}
}
