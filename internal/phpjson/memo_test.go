package phpjson

import (
	"strconv"
	"testing"
)

// TestMarshalMemoWritesWhatMarshalWrites: a tree encoded again and
// again with a Memo, each time with more kept objects, some of them
// reached twice, at different depths and inside lists, and kept lists,
// one of them reached again shorter, encodes as Marshal encodes it;
// kept objects and lists are remembered, others are not.
func TestMarshalMemoWritesWhatMarshalWrites(t *testing.T) {
	memo := &Memo{}
	results := NewObject()
	state := NewObject()
	state.Set("name", "fan/out ü")
	state.Set("results", results)
	items := []any{"a/b", int64(1), []any{int64(2)}, NewObject()}
	memo.KeepList(items)
	state.Set("items", items)
	state.Set("same items", items[:2])
	var kept []any
	for round := range 5 {
		for i := round * 3; i < round*3+3; i++ {
			e := NewObject()
			e.Set("index", int64(i))
			out := NewObject()
			out.Set("v", []any{int64(i), "x/" + strconv.Itoa(i), nil, 1.5})
			e.Set("output", out)
			e.Set("empty", NewObject())
			memo.Keep(e)
			results.Set(strconv.Itoa(i*7%11), e)
			kept = append(kept, e)
		}
		winners := append([]any{}, kept...)
		memo.KeepList(winners)
		state.Set("winners", winners)
		want, err := Marshal(state)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalMemo(state, memo, len(want)/2)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("round %d:\n got %s\nwant %s", round, got, want)
		}
	}
	if n := memo.Len(); n != len(kept) {
		t.Fatalf("memo holds %d objects, want the %d kept", n, len(kept))
	}
	if ml := memo.lists[&items[0]]; ml.b == nil || ml.n != len(items) {
		t.Fatalf("the kept item list was not remembered: %+v", ml)
	}
	for o, b := range memo.m {
		if b == nil {
			t.Fatalf("kept object %p was encoded but not remembered", o)
		}
	}
}
