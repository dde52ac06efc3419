package machine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestBuilderTextSettings: the builder's text settings are trimmed, and a
// blank one fails the definition with Queuety's message, the first
// failure winning.
func TestBuilderTextSettings(t *testing.T) {
	def, err := machine.New("m").
		State("a").On("go", "done").Terminal("done", queuetytype.MachineCompleted).
		Initial(" a ").OnQueue(" q ").Version(" v1 ").IdempotencyKey(" k ").
		Definition()
	if err != nil {
		t.Fatal(err)
	}
	if def.Initial != "a" || def.Queue != "q" || def.Version != "v1" || def.IdempotencyKey != "k" {
		t.Fatalf("settings not trimmed: %+v", def)
	}
	for _, tc := range []struct {
		set  func(*machine.Builder) *machine.Builder
		want string
	}{
		{func(b *machine.Builder) *machine.Builder { return b.Initial(" ") }, "State machine initial state cannot be empty."},
		{func(b *machine.Builder) *machine.Builder { return b.OnQueue("") }, "State machine queue cannot be empty."},
		{func(b *machine.Builder) *machine.Builder { return b.Version("\t") }, "State machine version cannot be empty."},
		{func(b *machine.Builder) *machine.Builder { return b.IdempotencyKey("") }, "State machine idempotency key cannot be empty."},
	} {
		b := machine.New("m").State("a").On("go", "done").Terminal("done", queuetytype.MachineCompleted)
		_, err := tc.set(b).OnQueue("").Definition()
		if !errors.Is(err, queuetytype.ErrInvalidArgument) || !strings.HasSuffix(err.Error(), ": "+tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}
