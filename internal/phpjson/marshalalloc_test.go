package phpjson

import (
	"fmt"
	"testing"
)

// Marshal allocates its result once, at its exact size, whatever the
// size of the encoding: its scratch buffer is reused. (The race
// detector drops pooled buffers at random, so the bound leaves room.)
func TestMarshalAllocatesOnce(t *testing.T) {
	o := NewObject()
	for i := range 40 {
		o.Set(fmt.Sprintf("key%d", i), "a value long enough to make the encoding grow past a kilobyte")
	}
	if _, err := Marshal(o); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		b, err := Marshal(o)
		if err != nil || len(b) != cap(b) {
			t.Fatalf("Marshal: %v, len %d cap %d", err, len(b), cap(b))
		}
	})
	if allocs > 2 {
		t.Fatalf("Marshal allocates %v times per call, want 1", allocs)
	}
}
