package engine

import "sync"

// wakeHub tells the workers of this process that jobs were just
// committed, so an idle worker claims them at once instead of at its next
// poll. Workers in other processes still find them by polling.
type wakeHub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// wakeHubs are the process's hubs by Config.WakeKey: engines opened on the
// same store share one, so a job dispatched through one client wakes the
// workers of another in the same process.
var wakeHubs sync.Map // string -> *wakeHub

// hubFor returns the shared hub of key, or a hub of its own when key is "".
func hubFor(key string) *wakeHub {
	if key == "" {
		return &wakeHub{}
	}
	h, _ := wakeHubs.LoadOrStore(key, &wakeHub{})
	return h.(*wakeHub)
}

// SubscribeWake returns a channel that receives (coalesced) wake-ups
// after this engine commits new jobs, and a function that unsubscribes.
func (e *Engine) SubscribeWake() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.wakes.mu.Lock()
	if e.wakes.subs == nil {
		e.wakes.subs = map[chan struct{}]struct{}{}
	}
	e.wakes.subs[ch] = struct{}{}
	e.wakes.mu.Unlock()
	return ch, func() {
		e.wakes.mu.Lock()
		delete(e.wakes.subs, ch)
		e.wakes.mu.Unlock()
	}
}

// wake signals every subscriber without blocking; a subscriber that has
// not read the previous wake-up gets one, not two.
func (e *Engine) wake() {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	for ch := range e.wakes.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
