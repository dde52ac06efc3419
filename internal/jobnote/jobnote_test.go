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

// namedTx is a transaction known only by its name: the hook is told which
// one it runs in.
type namedTx struct {
	driver.Tx
	name string
}

// TestGatherRunsTheHookOnce: completions run with a Gather context hold
// their ids back, and Gather's function runs the note's hook once with
// all of them, in the transaction they ran in; a note made inside runs
// its own hook at once.
func TestGatherRunsTheHookOnce(t *testing.T) {
	type call struct {
		tx  string
		ids []int64
	}
	var calls []call
	hook := func(_ context.Context, tx driver.Tx, ids []int64) error {
		calls = append(calls, call{tx.(namedTx).name, ids})
		return nil
	}
	ctx, n := With(context.Background())
	n.OnCompleted(hook)
	gctx, flush := Gather(ctx)
	tx := namedTx{name: "tx"}
	assert.NoError(t, Completed(gctx, tx, []int64{1}))
	assert.NoError(t, Completed(gctx, tx, []int64{2, 3}))
	inner, in := With(gctx)
	in.OnCompleted(hook)
	assert.NoError(t, Completed(inner, namedTx{name: "inner"}, []int64{4}))
	assert.Equal(t, []call{{"inner", []int64{4}}}, calls, "hook calls before the gathered run")
	assert.NoError(t, flush())
	assert.Equal(t, []call{{"inner", []int64{4}}, {"tx", []int64{1, 2, 3}}}, calls, "hook calls")
	assert.NoError(t, flush())
	assert.Len(t, calls, 2, "hook calls after a second run")

	plain, none := Gather(context.Background())
	assert.Nil(t, Of(plain))
	assert.NoError(t, none())
}
