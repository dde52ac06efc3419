package advance

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// A for-each step keeps its items and every branch's result in the
// workflow's state, so a workflow fanning out over thousands of items
// has a state of hundreds of kilobytes, which its claims and its branch
// results would otherwise decode again and again. stateCache keeps the
// decoded states of the few large workflows recorded last, keyed by the
// exact stored bytes: a state read back unchanged (the one this process
// wrote, or read, last) is not decoded again. The cached trees are
// read-only; whoever changes a state works on a copy.

const (
	// minCachedState is the smallest stored state the cache keeps:
	// decoding a smaller one costs less than keeping it.
	minCachedState = 32 << 10
	// maxCachedStates caps the states kept, each a decoded tree of a
	// few times its stored size.
	maxCachedStates = 8
)

// stateCache maps workflow ids to their last decoded large state.
type stateCache struct {
	mu    sync.Mutex
	m     map[int64]*cachedState
	order []int64 // ids, oldest first
	// memos holds, per workflow cached, the encodings of its for-each
	// entries (memo): each is written again with every state of the
	// workflow, and never changes once recorded.
	memos map[int64]*phpjson.Memo
}

// cachedState is one workflow's stored state and its decoded tree.
type cachedState struct {
	prev  *cachedState // the version cached before, if any (no prev of its own)
	raw   []byte
	state *phpjson.Object
	steps []*stepDef
	// keyed are the for-each results and failures arrays of state the
	// engine recorded, every entry keyed by its index
	// (workflowstate.LoadForEachKeyed).
	keyed []*phpjson.Object
}

// lookup returns the cached version of wf's state that is exactly its
// stored state, or nil.
func (c *stateCache) lookup(wf *driver.Workflow) *cachedState {
	if len(wf.State) < minCachedState {
		return nil
	}
	c.mu.Lock()
	cs := c.m[wf.ID]
	c.mu.Unlock()
	for ; cs != nil; cs = cs.prev {
		if bytes.Equal(cs.raw, wf.State) {
			return cs
		}
	}
	return nil
}

// get returns the decoded state and steps of wf when the cache holds
// exactly its stored state. Both are read-only.
func (c *stateCache) get(wf *driver.Workflow) (*phpjson.Object, []*stepDef, bool) {
	cs := c.lookup(wf)
	if cs == nil {
		return nil, nil, false
	}
	return cs.state, cs.steps, true
}

// put remembers the decoded state of workflow id as stored in raw; the
// caller never changes state or steps afterwards. The version cached
// before stays, as the previous one: a state is put as its transaction
// commits, while others may still read the version before it.
func (c *stateCache) put(id int64, raw []byte, state *phpjson.Object, steps []*stepDef, keyed ...*phpjson.Object) {
	if len(raw) < minCachedState {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]*cachedState{}
	}
	if _, ok := c.m[id]; !ok {
		if len(c.order) >= maxCachedStates {
			delete(c.m, c.order[0])
			delete(c.memos, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, id)
	}
	next := &cachedState{raw: raw, state: state, steps: steps, keyed: keyed}
	switch cur := c.m[id]; {
	case cur == nil:
	case bytes.Equal(cur.raw, raw):
		if len(keyed) == 0 {
			return // what is cached is as good, and may know more (keyed)
		}
		next.prev = cur.prev
	case cur.prev != nil && bytes.Equal(cur.prev.raw, raw):
		return // the version before, read again: the newer one stays
	default:
		next.prev = &cachedState{raw: cur.raw, state: cur.state, steps: cur.steps, keyed: cur.keyed}
	}
	c.m[id] = next
}

// keyed returns what LoadForEachKeyed needs to know of the state of wf
// as stored: which of its entry arrays the engine recorded. It knows of
// none unless the cache holds exactly wf's stored state.
func (c *stateCache) keyed(wf *driver.Workflow) func(*phpjson.Object) bool {
	cs := c.lookup(wf)
	if cs == nil || len(cs.keyed) == 0 {
		return nil
	}
	return func(o *phpjson.Object) bool { return slices.Contains(cs.keyed, o) }
}

// memo returns the encoding memo of workflow id, or nil when the cache
// does not hold the workflow (its state is small, or it was evicted).
func (c *stateCache) memo(id int64) *phpjson.Memo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[id] == nil {
		return nil
	}
	if c.memos == nil {
		c.memos = map[int64]*phpjson.Memo{}
	}
	m := c.memos[id]
	if m == nil {
		m = &phpjson.Memo{}
		c.memos[id] = m
	}
	return m
}

// DecodeState returns the decoded state and step definitions of wf, read
// only: from the cache when it holds wf's stored state, else decoded
// (and cached when large).
func (s *Service) DecodeState(wf *driver.Workflow) (*phpjson.Object, []*stepDef, error) {
	if state, steps, ok := s.states.get(wf); ok {
		return state, steps, nil
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return nil, nil, fmt.Errorf("workflow %d: %w", wf.ID, err)
	}
	steps, err := parseSteps(state)
	if err != nil {
		return state, nil, fmt.Errorf("workflow %d: malformed step definitions: %w", wf.ID, err)
	}
	s.states.put(wf.ID, wf.State, state, steps)
	return state, steps, nil
}
