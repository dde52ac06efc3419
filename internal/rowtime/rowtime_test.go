package rowtime

import (
	"testing"
	"time"
)

func TestRounding(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	half := base.Add(500 * time.Millisecond)
	if got := Floor(half); !got.Equal(base) {
		t.Errorf("Floor(%v) = %v, want %v", half, got, base)
	}
	if got := Ceil(half); !got.Equal(base.Add(time.Second)) {
		t.Errorf("Ceil(%v) = %v, want %v", half, got, base.Add(time.Second))
	}
	if got := Ceil(base); !got.Equal(base) {
		t.Errorf("Ceil(%v) = %v, want it unchanged", base, got)
	}
	if got := Due(half, 0); !got.Equal(base) {
		t.Errorf("Due(now, 0) = %v, want %v", got, base)
	}
	if got := Due(half, time.Second); !got.Equal(base.Add(2 * time.Second)) {
		t.Errorf("Due(now, 1s) = %v, want %v", got, base.Add(2*time.Second))
	}
	if got := ISO(time.Time{}); got != "" {
		t.Errorf("ISO(zero) = %q, want empty", got)
	}
	if got, want := ISO(half), "2026-01-02T03:04:05.500000Z"; got != want {
		t.Errorf("ISO = %q, want %q", got, want)
	}
}
