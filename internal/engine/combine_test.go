package engine

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCombinerServesQueuedCallersInOneTurn: callers that arrive while a
// turn runs are served together by the next turn, each with its own result.
func TestCombinerServesQueuedCallersInOneTurn(t *testing.T) {
	var c combiner[int, int]
	release := make(chan struct{})
	started := make(chan struct{})
	var log turnLog
	run := func(ts []*turn[int, int]) {
		if log.record(ts) == 1 {
			close(started)
			<-release
		}
	}
	all := func(ts []*turn[int, int]) int { return len(ts) }

	results := make(chan [2]int, 4)
	go func() {
		res, err := c.do("k", 1, all, run)
		assert.NoError(t, err)
		results <- [2]int{1, res}
	}()
	<-started
	var queued sync.WaitGroup
	for _, r := range []int{2, 3, 4} {
		queued.Add(1)
		go func() {
			queued.Done()
			res, err := c.do("k", r, all, run)
			assert.NoError(t, err)
			results <- [2]int{r, res}
		}()
	}
	queued.Wait()
	// Wait until all three are queued behind the running turn.
	for {
		c.mu.Lock()
		n := len(c.waiting["k"])
		c.mu.Unlock()
		if n == 3 {
			break
		}
	}
	close(release)
	got := map[int]int{}
	for range 4 {
		r := <-results
		got[r[0]] = r[1]
	}
	assert.Equal(t, map[int]int{1: 10, 2: 20, 3: 30, 4: 40}, got)
	turns := log.all()
	require.Len(t, turns, 2, "the three queued callers share one turn")
	assert.Equal(t, []int{1}, turns[0])
	assert.ElementsMatch(t, []int{2, 3, 4}, turns[1])
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.busy, "no turn is left running")
}

// TestCombinerTakeLimitsATurn: take bounds how many queued callers one turn
// serves; the rest get a turn of their own, and different keys never
// share one.
func TestCombinerTakeLimitsATurn(t *testing.T) {
	var c combiner[int, int]
	var mu sync.Mutex
	sizes := map[string][]int{}
	gate := make(chan struct{})
	first := true
	run := func(ts []*turn[int, int]) {
		for _, t := range ts {
			t.res = t.req
		}
		mu.Lock()
		key := "a"
		if ts[0].req >= 100 {
			key = "b"
		}
		sizes[key] = append(sizes[key], len(ts))
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-gate
		}
	}
	two := func(ts []*turn[int, int]) int { return min(2, len(ts)) }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.do("a", 0, two, run) }()
	for {
		c.mu.Lock()
		busy := c.busy["a"]
		c.mu.Unlock()
		if busy {
			break
		}
	}
	for _, r := range []int{1, 2, 3} {
		wg.Add(1)
		go func() { defer wg.Done(); c.do("a", r, two, run) }()
	}
	for {
		c.mu.Lock()
		n := len(c.waiting["a"])
		c.mu.Unlock()
		if n == 3 {
			break
		}
	}
	res, err := c.do("b", 100, two, run) // another key runs at once
	require.NoError(t, err)
	assert.Equal(t, 100, res)
	close(gate)
	wg.Wait()
	assert.Equal(t, []int{1}, sizes["b"])
	assert.Equal(t, []int{1, 2, 1}, sizes["a"], "a turn of the leader, then two callers, then the last")
}

// TestCombinerLeadHookServesCallersQueuedWhileItWaits: the caller that
// runs a turn calls its lead hook before it takes the turn's calls; a
// hook that unlocks c.mu while it waits sees a caller queued meanwhile,
// and that caller is served in the same turn. The queued hook runs once
// for every caller.
func TestCombinerLeadHookServesCallersQueuedWhileItWaits(t *testing.T) {
	var c combiner[int, int]
	var log turnLog
	run := func(ts []*turn[int, int]) { log.record(ts) }
	all := func(ts []*turn[int, int]) int { return len(ts) }
	var queued atomic.Int32
	second := make(chan [2]int, 1)
	leader := hooks[int, int]{
		queued: func() { queued.Add(1) },
		lead: func(queue func() []*turn[int, int]) {
			assert.Len(t, queue(), 1, "only the leader has queued yet")
			c.mu.Unlock()
			go func() {
				res, err := c.doWith("k", 2, hooks[int, int]{queued: func() { queued.Add(1) }}, all, run)
				assert.NoError(t, err)
				second <- [2]int{2, res}
			}()
			// Wait, with c.mu released, until the second caller has queued.
			for {
				c.mu.Lock()
				if len(queue()) == 2 {
					return
				}
				c.mu.Unlock()
				runtime.Gosched()
			}
		},
	}
	res, err := c.doWith("k", 1, leader, all, run)
	require.NoError(t, err)
	assert.Equal(t, 10, res)
	require.Equal(t, [][]int{{1, 2}}, log.all(), "the caller queued while the hook waited shares its turn")
	assert.Equal(t, [2]int{2, 20}, <-second)
	assert.Equal(t, int32(2), queued.Load(), "the queued hook runs for each caller")
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(t, c.busy, "no turn is left running")
}

// turnLog answers each call of a turn with its request × 10 and records
// the requests of each turn.
type turnLog struct {
	mu    sync.Mutex
	turns [][]int
}

// record answers and records the turn ts and returns how many turns it
// has recorded.
func (l *turnLog) record(ts []*turn[int, int]) int {
	reqs := make([]int, 0, len(ts))
	for _, t := range ts {
		reqs = append(reqs, t.req)
		t.res = t.req * 10
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = append(l.turns, reqs)
	return len(l.turns)
}

// all returns the turns recorded so far.
func (l *turnLog) all() [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.turns)
}
