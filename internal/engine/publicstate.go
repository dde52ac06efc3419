package engine

import (
	"iter"
	"maps"
	"slices"
	"sync"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// The step jobs of one workflow claimed together share its decoded state
// (claimIn), and each handler gets the public part of it as Go maps and
// slices. For the branches of a for-each step that state holds the item
// list, often thousands of items: converting it for every branch cost
// more than the rest of running the branch. publicState converts it once
// for the claims of one workflow in one batch and hands each handler a
// copy of its own, copied without looking anything up: what a handler
// changes in its State, at any depth, stays its own.

// publicState is the public state of one workflow as shared by the
// claims of one batch.
type publicState struct {
	users int // the claims sharing it
	once  sync.Once
	plain map[string]any // read only
	// flat holds the top-level keys of plain whose value is a list or a
	// map with no list or map in it (a for-each's item list of scalars,
	// most often): a copy of its values is a copy of the whole.
	flat map[string]bool
}

// handlerState returns a handler's own copy of the public part of state.
func (p *publicState) handlerState(state *phpjson.Object) State {
	if p == nil || p.users < 2 {
		return workflowstate.PublicMap(state)
	}
	p.once.Do(func() {
		p.plain = workflowstate.PublicMap(state)
		p.flat = flatContainers(p.plain)
	})
	c := maps.Clone(p.plain)
	for k, v := range c {
		switch {
		case p.flat[k]:
			c[k] = cloneFlat(v)
		case isPlainContainer(v):
			c[k] = clonePlain(v)
		}
	}
	return c
}

// flatContainers returns the keys of m whose value is a list or a map
// holding no list or map.
func flatContainers(m map[string]any) map[string]bool {
	flat := map[string]bool{}
	for k, v := range m {
		switch x := v.(type) {
		case []any:
			flat[k] = !holdsContainer(slices.Values(x))
		case map[string]any:
			flat[k] = !holdsContainer(maps.Values(x))
		}
	}
	return flat
}

// holdsContainer reports whether any of values is a map or a list.
func holdsContainer(values iter.Seq[any]) bool {
	for v := range values {
		if isPlainContainer(v) {
			return true
		}
	}
	return false
}

// cloneFlat copies a list or map that holds no list or map: its values
// are immutable, so a shallow copy is a whole one.
func cloneFlat(v any) any {
	switch x := v.(type) {
	case []any:
		return slices.Clone(x)
	case map[string]any:
		return maps.Clone(x)
	}
	return v
}

// clonePlainMap deep-copies a tree of map[string]any and []any values.
func clonePlainMap(m map[string]any) map[string]any {
	c := maps.Clone(m)
	for k, v := range c {
		if isPlainContainer(v) {
			c[k] = clonePlain(v)
		}
	}
	return c
}

func clonePlain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		return clonePlainMap(x)
	case []any:
		if x == nil {
			return x
		}
		c := slices.Clone(x)
		for i, e := range c {
			if isPlainContainer(e) {
				c[i] = clonePlain(e)
			}
		}
		return c
	}
	return v
}

// isPlainContainer reports whether v is a map or slice of the plain
// tree ToMap builds; every other value in it is immutable.
func isPlainContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
