package engine

import "sync"

// wakeHub tells the workers of this process that something they wait for
// was just committed, so an idle worker acts at once instead of at its
// next poll. Workers in other processes still find it by polling.
//
// An engine has two hubs: one for new jobs (the claim loops) and one for
// saved schedules (the schedule tick), so a stream of dispatches does not
// wake the schedule tick and a saved schedule does not make every worker
// claim.
type wakeHub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// wakeHubs are the process's hubs by Config.WakeKey (and kind): engines
// opened on the same store share them, so a job dispatched or a schedule
// saved through one client wakes the workers of another in the same
// process.
var wakeHubs sync.Map // string -> *wakeHub

// hubFor returns the shared hub of key and kind, or a hub of its own when
// key is "".
func hubFor(key, kind string) *wakeHub {
	if key == "" {
		return &wakeHub{}
	}
	h, _ := wakeHubs.LoadOrStore(kind+"\x00"+key, &wakeHub{})
	return h.(*wakeHub)
}

// The kinds of wake-up hubs.
const (
	wakeJobs      = "jobs"
	wakeSchedules = "schedules"
)

// subscribe returns a channel that receives (coalesced) wake-ups and a
// function that unsubscribes.
func (h *wakeHub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan struct{}]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// signal wakes every subscriber without blocking; a subscriber that has
// not read the previous wake-up gets one, not two.
func (h *wakeHub) signal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// SubscribeWake returns a channel that receives (coalesced) wake-ups
// after this engine commits new jobs, and a function that unsubscribes.
func (e *Engine) SubscribeWake() (<-chan struct{}, func()) { return e.wakes.subscribe() }

// wake signals the claim loops that jobs were committed.
func (e *Engine) wake() { e.wakes.signal() }

// SubscribeScheduleWake returns a channel that receives (coalesced)
// wake-ups after this engine saved a schedule or switched one on, so a
// schedule tick sleeping until the next due schedule it knew of reads the
// next due time again, and a function that unsubscribes.
func (e *Engine) SubscribeScheduleWake() (<-chan struct{}, func()) { return e.schedWakes.subscribe() }

// wakeSchedules signals the schedule ticks that a schedule changed.
func (e *Engine) wakeSchedules() { e.schedWakes.signal() }
