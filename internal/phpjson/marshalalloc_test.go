package phpjson

import (
	"fmt"
	"testing"
)

// Marshal allocates its result once, at its exact size, whatever the
// size of the encoding: its scratch buffer is reused.
func TestMarshalAllocatesOnce(t *testing.T) {
	if raceEnabled {
		// The race detector's sync.Pool drops a random quarter of the
		// buffers put back, so the count depends on chance there; CI runs
		// this test without it too (.ci/run).
		t.Skip("allocation counts are random under the race detector")
	}
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
	if allocs > 1 {
		t.Fatalf("Marshal allocates %v times per call, want 1", allocs)
	}
}
