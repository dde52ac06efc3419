package mysql

import "sync"

// A send leaves the store's own listeners alone (see wake.go): the engine
// wakes its own process's workers in-process as it commits, and a send
// that found only them found no other process, so the quiet rule holds
// back the sends of a process that works alone. The clients of one
// process opened on the same DSN wake one another's workers in-process
// too (the engine's wake key), so their stores share one set of own
// listeners (ShareWake): the sends of one leave the listeners of all
// alone. Stores given no key, or another, keep a set of their own.

// listenerSet is a set of listeners, by server and connection id: one
// store's, or those of the stores of one wake key.
type listenerSet struct {
	mu  sync.Mutex
	ids map[listenerID]struct{}
}

// sharedOwn are the process's sets of own listeners by wake key.
var sharedOwn sync.Map // string -> *listenerSet

// ShareWake implements driver.WakeSharer: the store's own listeners are
// those of every store of the process given the same key. It is called
// before the store notifies or listens.
func (s *Store) ShareWake(key string) {
	set, _ := sharedOwn.LoadOrStore(key, &listenerSet{})
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	s.wake.own = set.(*listenerSet)
}

// ownSet returns the store's set of own listeners.
func (s *Store) ownSet() *listenerSet {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	if s.wake.own == nil {
		s.wake.own = &listenerSet{}
	}
	return s.wake.own
}

// ownListeners returns a copy of the store's own listeners, or nil.
func (s *Store) ownListeners() map[listenerID]struct{} {
	return s.ownSet().copy()
}

// set records (add) or forgets a listener.
func (o *listenerSet) set(id listenerID, add bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !add {
		delete(o.ids, id)
		return
	}
	if o.ids == nil {
		o.ids = map[listenerID]struct{}{}
	}
	o.ids[id] = struct{}{}
}

// copy returns a copy of the set, or nil when it is empty.
func (o *listenerSet) copy() map[listenerID]struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ids) == 0 {
		return nil
	}
	out := make(map[listenerID]struct{}, len(o.ids))
	for id := range o.ids {
		out[id] = struct{}{}
	}
	return out
}
