package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSerialWritesTakeTurns: one turn at a time; a wait for a taken turn
// ends with its context; a given turn can be taken again; and without
// serial writers every turn is free.
func TestSerialWritesTakeTurns(t *testing.T) {
	s := newSerialWrites(true)
	ctx := context.Background()
	require.True(t, s.take(ctx), "the first turn is free")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, s.take(cancelled), "a turn that is taken waits until the context ends")

	taken := make(chan bool)
	go func() { taken <- s.take(ctx) }()
	s.give()
	assert.True(t, <-taken, "the waiting goroutine takes the given turn")
	s.give()

	var none *serialWrites
	assert.True(t, none.take(cancelled), "no serial writers: every turn is free")
	none.give()
	none.allFinished()
}
