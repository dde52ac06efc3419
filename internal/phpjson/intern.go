package phpjson

import (
	"hash/maphash"
	"sync/atomic"
)

// The decoder takes the short strings it meets again and again from a
// table instead of allocating them anew: a workflow's state repeats the
// same keys and words (step types, handler and step names, runtime keys)
// in every object of it and in every state of every workflow of the
// same definition. The table follows whatever words recur: a string is
// kept on its second sighting in a row at its slot, so strings seen
// once (ids, times, messages) never displace one kept, and cost only
// their hash. Kept strings are immutable and shared by every decoding.

const (
	// internSlots is the table's size, a power of two.
	internSlots = 4096
	// internMaxLen is the longest string the table keeps.
	internMaxLen = 32
)

// internEntry is a kept string, and the same string as a decoded value.
type internEntry struct {
	s string
	v any
}

// internSlot is one slot of the table: the string it keeps, and the tag
// of the string last seen there that it does not keep.
type internSlot struct {
	e    atomic.Pointer[internEntry]
	seen atomic.Uint32
}

var (
	internTable [internSlots]internSlot
	internSeed  = maphash.MakeSeed()
)

// interned returns the kept entry for b, keeping it when b was the
// string seen last at its slot; nil when the caller is to allocate the
// string itself. b is 1 to internMaxLen bytes.
func interned(b []byte) *internEntry {
	h := maphash.Bytes(internSeed, b)
	slot := &internTable[h&(internSlots-1)]
	if e := slot.e.Load(); e != nil && e.s == string(b) {
		return e
	}
	tag := uint32(h>>32) | 1
	if slot.seen.Load() != tag {
		slot.seen.Store(tag)
		return nil
	}
	e := &internEntry{s: string(b)}
	e.v = e.s
	slot.e.Store(e)
	return e
}
