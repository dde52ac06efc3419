package phpjson

import "sync"

// Memo remembers the encodings of objects that never change once built,
// so that a large tree written again and again, each time with a few new
// such objects, encodes each of them once. Only objects passed to Keep
// are remembered, the first time MarshalMemo meets them; whoever keeps
// an object promises never to change it (nor anything inside it)
// afterwards. A Memo is safe for concurrent use.
type Memo struct {
	mu sync.Mutex
	m  map[*Object][]byte
	// lists holds the kept lists by their first element, with their
	// length: a few, the lists of the latest states.
	lists map[*any]memoList
}

// memoList is a kept list's length and remembered encoding.
type memoList struct {
	n int
	b []byte
}

// maxMemoObjects caps the objects a Memo keeps; keeping one more
// forgets them all, and the tree is encoded afresh once.
const maxMemoObjects = 1 << 17

// maxMemoLists caps the lists a Memo keeps; keeping one more forgets
// them all.
const maxMemoLists = 8

// KeepList marks l as never changing again (neither its elements nor
// anything inside them), as Keep does for objects.
func (m *Memo) KeepList(l []any) {
	if len(l) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ml, ok := m.lists[&l[0]]; ok && ml.n == len(l) {
		return
	}
	if m.lists == nil || len(m.lists) >= maxMemoLists {
		m.lists = map[*any]memoList{}
	}
	m.lists[&l[0]] = memoList{n: len(l)}
}

// Keep marks o as never changing again: MarshalMemo remembers its
// encoding from then on.
func (m *Memo) Keep(o *Object) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemoObjects {
		m.m = map[*Object][]byte{}
	}
	if _, ok := m.m[o]; !ok {
		m.m[o] = nil
	}
}

// Len returns the number of objects kept.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// MarshalMemo encodes v as Marshal does, writing the objects memo keeps
// from their remembered encoding. sizeHint is the expected length of
// the result (0 when unknown).
func MarshalMemo(v any, memo *Memo, sizeHint int) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, max(sizeHint, 256))}
	if memo != nil {
		memo.mu.Lock()
		defer memo.mu.Unlock()
		e.memo, e.memoLists = memo.m, memo.lists
	}
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// memoObject writes o from e.memo when it is kept there, remembering
// its encoding the first time. It reports whether o is kept.
func (e *encoder) memoObject(o *Object) (bool, error) {
	b, kept := e.memo[o]
	if !kept {
		return false, nil
	}
	if b != nil {
		e.buf = append(e.buf, b...)
		return true, nil
	}
	start := len(e.buf)
	if err := e.plainObject(o); err != nil {
		return true, err
	}
	e.memo[o] = append([]byte(nil), e.buf[start:]...)
	return true, nil
}

// memoList writes l from e.memoLists when it is kept there, remembering
// its encoding the first time. It reports whether l is kept.
func (e *encoder) memoList(l []any) (bool, error) {
	if len(l) == 0 {
		return false, nil
	}
	ml, kept := e.memoLists[&l[0]]
	if !kept || ml.n != len(l) {
		return false, nil
	}
	if ml.b != nil {
		e.buf = append(e.buf, ml.b...)
		return true, nil
	}
	start := len(e.buf)
	if err := e.plainList(l); err != nil {
		return true, err
	}
	ml.b = append([]byte(nil), e.buf[start:]...)
	e.memoLists[&l[0]] = ml
	return true, nil
}
