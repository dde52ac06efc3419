package phpjson

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
)

// An Object of a handful of keys keeps its values beside its keys, with
// no map: a copy, a filtered copy and a small object built key by key
// allocate the object, its keys and its values, and nothing else.
func TestSmallObjectAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are random under the race detector")
	}
	doc := []byte(`{"type":"single","handler":"s","name":"a","queue":"default","max_attempts":3}`)
	o, err := DecodeObject(doc)
	if err != nil {
		t.Fatal(err)
	}
	var sink *Object
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"Shallow", 3, func() { sink = o.Shallow() }},
		{"NewObject and 3 Sets", 3, func() {
			x := NewObject()
			x.Set("a", 1)
			x.Set("b", 2)
			x.Set("c", 3)
			sink = x
		}},
		{"Filter", 3, func() { sink = o.Filter(func(k string) bool { return k != "name" }) }},
	} {
		if got := testing.AllocsPerRun(200, c.f); got > c.max {
			t.Errorf("%s: %v allocations, want at most %v", c.name, got, c.max)
		}
	}
	_ = sink
}

// Set, Get and Delete keep PHP's order and find every key on both sides
// of indexFrom, where the object starts and stops keeping an index.
func TestObjectAcrossIndexThreshold(t *testing.T) {
	o := NewObject()
	var want []string
	for i := range indexFrom + 5 {
		k := fmt.Sprintf("k%d", i)
		o.Set(k, i)
		want = append(want, k)
		for j, wk := range want {
			if v, ok := o.Get(wk); !ok || v != j {
				t.Fatalf("after %d keys: Get(%q) = %v, %v", i+1, wk, v, ok)
			}
		}
		if (o.idx != nil) != (o.Len() > indexFrom) {
			t.Fatalf("%d keys: index kept %v", o.Len(), o.idx != nil)
		}
	}
	o.Set("k3", "again") // keeps its position
	if v, _ := o.Get("k3"); v != "again" || !slices.Equal(o.Keys(), want) {
		t.Fatalf("Set of an existing key: %v, keys %v", v, o.Keys())
	}
	c := o.Shallow()
	for o.Len() > 0 {
		k := o.Keys()[o.Len()/2]
		o.Delete(k)
		want = slices.DeleteFunc(want, func(s string) bool { return s == k })
		if !slices.Equal(o.Keys(), want) {
			t.Fatalf("after Delete(%q): keys %v, want %v", k, o.Keys(), want)
		}
		for _, wk := range want {
			if _, ok := o.Get(wk); !ok {
				t.Fatalf("after Delete(%q): %q lost", k, wk)
			}
		}
		if _, ok := o.Get(k); ok {
			t.Fatalf("Delete(%q) left it", k)
		}
		if (o.idx != nil) != (o.Len() > indexFrom) {
			t.Fatalf("%d keys: index kept %v", o.Len(), o.idx != nil)
		}
	}
	if c.Len() != indexFrom+5 {
		t.Fatalf("the copy lost keys with the original: %d", c.Len())
	}
	if v, _ := c.Get("k3"); v != "again" {
		t.Fatalf("copy: k3 = %v", v)
	}
}

// A decoded object with a repeated key keeps the key at its first
// position with its last value, small or large, as Set does.
func TestDecodeRepeatedKeys(t *testing.T) {
	for _, n := range []int{3, indexFrom, indexFrom + 3, 40} {
		doc := []byte{'{'}
		for i := range n {
			doc = fmt.Appendf(doc, `"k%d":%d,`, i, i)
		}
		doc = fmt.Appendf(doc, `"k1":"last","k%d":"new","k0":"zero"}`, n)
		o, err := DecodeObject(doc)
		if err != nil {
			t.Fatal(err)
		}
		want := NewObject()
		for i := range n {
			want.Set("k"+strconv.Itoa(i), int64(i))
		}
		want.Set("k1", "last")
		want.Set("k"+strconv.Itoa(n), "new")
		want.Set("k0", "zero")
		got, _ := Marshal(o)
		exp, _ := Marshal(want)
		if string(got) != string(exp) || o.Len() != n+1 {
			t.Fatalf("%d keys: decoded %s, want %s", n, got, exp)
		}
		for _, k := range want.Keys() {
			gv, _ := o.Get(k)
			wv, _ := want.Get(k)
			if gv != wv {
				t.Fatalf("%d keys: Get(%q) = %v, want %v", n, k, gv, wv)
			}
		}
	}
}
