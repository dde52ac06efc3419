package phpjson

import (
	"reflect"
	"testing"
)

// Filter and FilterMap keep the accepted keys in order with the values
// shared, and leave the object as it was.
func TestFilterKeepsOrderAndValues(t *testing.T) {
	nested := NewObject()
	nested.Set("x", int64(1))
	o := NewObject()
	o.Set("b", nested)
	o.Set("_p", "private")
	o.Set("a", []any{"l"})
	public := func(k string) bool { return k[0] != '_' }

	f := o.Filter(public)
	if got := f.Keys(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Fatalf("Filter keys = %v", got)
	}
	if v, _ := f.Get("b"); v != any(nested) {
		t.Fatalf("Filter copied a nested value: %#v", v)
	}
	f.Set("c", true)
	if o.Len() != 3 {
		t.Fatalf("setting a key of the filtered copy changed the original: %v", o.Keys())
	}
	if got, want := o.FilterMap(public), o.Filter(public).ToMap(); !reflect.DeepEqual(got, want) {
		t.Fatalf("FilterMap = %#v, want %#v", got, want)
	}
	if none := o.Filter(func(string) bool { return false }); !reflect.DeepEqual(none, NewObject()) {
		t.Fatalf("an empty filter is not NewObject's empty object: %#v", none)
	}
}
