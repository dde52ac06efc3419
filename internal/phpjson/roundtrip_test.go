package phpjson

import (
	"math"
	"reflect"
	"testing"
)

// TestRoundTrips checks RoundTrips against an actual encode and decode:
// whenever it says a tree round-trips, decoding its encoding gives the
// tree back; and the trees that come back changed are the ones it
// rejects.
func TestRoundTrips(t *testing.T) {
	nested := NewObject()
	nested.Set("a", int64(1))
	nested.Set("b", []any{"x", 2.5, nil, true})
	listKeyed := NewObject()
	listKeyed.Set("0", "a")
	listKeyed.Set("1", "b")
	withEmpty := NewObject()
	withEmpty.Set("e", NewObject())
	withWhole := NewObject()
	withWhole.Set("f", 3.0)
	cases := []struct {
		name string
		v    any
		want bool
	}{
		{"nested object", nested, true},
		{"empty list", []any{}, true},
		{"fraction", 0.25, true},
		{"big fraction", 1.5e300, false}, // whole at that size
		{"empty object", NewObject(), false},
		{"list-keyed object", listKeyed, false},
		{"nested empty object", withEmpty, false},
		{"whole float", withWhole, false},
		{"nil list", []any(nil), false},
		{"Go int", 3, false},
		{"map", map[string]any{"a": int64(1)}, false},
		{"invalid UTF-8", "\xff", false},
		{"NaN", math.NaN(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RoundTrips(c.v); got != c.want {
				t.Fatalf("RoundTrips = %v, want %v", got, c.want)
			}
			b, err := Marshal(c.v)
			if err != nil {
				return
			}
			back, err := Decode(b)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if same := reflect.DeepEqual(back, c.v); c.want && !same {
				t.Fatalf("RoundTrips said yes, but %s decodes to %#v", b, back)
			}
		})
	}
}

// FuzzRoundTrips decodes arbitrary JSON, and checks that whatever tree
// RoundTrips accepts comes back equal from its encoding.
func FuzzRoundTrips(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1.5,"x",null]}`, `[]`, `{"0":1}`, `{"a":{}}`, `2.0`, `{"k":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil || !RoundTrips(v) {
			return
		}
		b, err := Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("%s: RoundTrips said yes, got %#v back", b, back)
		}
	})
}
