package jobnote

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/store/driver"
)

// TestMarkAndRewindAllocateNothing: a transaction attempt of the store's
// helper marks the note, notes jobs and, rolled back, rewinds it; for a
// note of a few queues and handlers none of it allocates, and the note
// holds after each rewind what it held at the mark.
func TestMarkAndRewindAllocateNothing(t *testing.T) {
	ctx, n := With(context.Background())
	a := &driver.Job{Queue: "q", Handler: "a"}
	b := &driver.Job{Queue: "q", Handler: "b"}
	Inserted(ctx, []*driver.Job{a})
	jobs := []*driver.Job{a, b}
	allocs := testing.AllocsPerRun(100, func() {
		m := n.Mark()
		Inserted(ctx, jobs)
		Ready(ctx, b)
		Any(ctx)
		n.Rewind(m)
	})
	assert.Zero(t, allocs, "allocations of an attempt's mark, notes and rewind")
	counts, any := n.Take()
	assert.Equal(t, map[Key]int{{Queue: "q", Handler: "a"}: 1}, counts, "jobs noted after the rewinds")
	assert.False(t, any, "jobs of unknown number noted after the rewinds")

	var none *Note
	none.Rewind(none.Mark()) // a context without a note
}

// TestRewindKeepsWhatCameBefore: jobs noted in runs of one key (a, a, b,
// a) count as one map entry each key, and a rewind to a mark taken in
// the middle of a run restores that run's count.
func TestRewindKeepsWhatCameBefore(t *testing.T) {
	ctx, n := With(context.Background())
	a := &driver.Job{Queue: "q", Handler: "a"}
	b := &driver.Job{Queue: "q", Handler: "b"}
	Ready(ctx, a, a, b, a)
	m := n.Mark()
	Ready(ctx, a, b, b)
	assert.True(t, n.Pending())
	n.Rewind(m)
	counts, any := n.Take()
	assert.Equal(t, map[Key]int{{Queue: "q", Handler: "a"}: 3, {Queue: "q", Handler: "b"}: 1}, counts)
	assert.False(t, any)
	assert.False(t, n.Pending(), "pending after Take")
}
