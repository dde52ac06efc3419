package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// wakeHub tells the workers of this process that something they wait for
// was just committed, so an idle worker acts at once instead of at its
// next poll. Workers in other processes hear of it through remoteWake
// (see Engine.wake), or find it by polling.
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
// On a store that carries notifications between processes
// (driver.JobNotifier), the engine listens while it has subscribers, so
// jobs committed by other processes wake them too.
func (e *Engine) SubscribeWake() (<-chan struct{}, func()) {
	ch, unsubscribe := e.wakes.subscribe()
	if e.remote == nil {
		return ch, unsubscribe
	}
	e.remote.listen(e.wakes.signal)
	var once sync.Once
	return ch, func() {
		unsubscribe()
		once.Do(e.remote.unlisten)
	}
}

// WakeLive reports whether jobs committed by other processes wake this
// process's idle workers now: the store carries notifications between
// processes (driver.LiveJobNotifier) and its listener, started by
// SubscribeWake, hears them. While it does not, idle workers find such
// jobs only by polling.
func (e *Engine) WakeLive() bool { return e.remote != nil && e.remote.live.Load() }

// wake signals the claim loops that jobs were committed, in this process
// and, on a store that carries notifications, in the others.
func (e *Engine) wake() {
	e.wakes.signal()
	if e.remote != nil {
		e.remote.notify()
	}
}

// noteJobs returns ctx carrying a note of the pending jobs that the
// transactions run with it insert (a workflow's next step job, for-each
// branches, a child workflow's first step, compensation and callback
// jobs), and a function to call once they committed: when they inserted
// any, it wakes idle workers as a dispatch does, in this process and,
// through the coalesced send, in the others. Jobs inserted already
// claimed by the committing worker (the eager handoff) are not pending
// and wake no one.
func (e *Engine) noteJobs(ctx context.Context) (context.Context, func()) {
	ctx, n := jobnote.With(ctx)
	return ctx, func() {
		if n.Pending() {
			e.wake()
		}
	}
}

// remoteWake carries wake-ups between processes through a
// driver.JobNotifier: notify sends one without making the committing
// caller wait (one in flight at a time, the rest coalesced into one
// more), and a listener runs while the engine has subscribers.
type remoteWake struct {
	n   driver.JobNotifier
	log *slog.Logger

	// live is set while the listener hears notifications (a store
	// without driver.LiveJobNotifier never reports it).
	live atomic.Bool

	mu        sync.Mutex
	sending   bool
	pending   bool
	failed    bool // a send failed; the first failure is logged
	listeners int
	stop      context.CancelFunc
	stopped   chan struct{}
}

// notify sends a notification in the background.
func (r *remoteWake) notify() {
	r.mu.Lock()
	if r.sending {
		r.pending = true
		r.mu.Unlock()
		return
	}
	r.sending = true
	r.mu.Unlock()
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := r.n.NotifyJobs(ctx) // a lost notification costs the others a poll
			cancel()
			r.mu.Lock()
			if err != nil && !r.failed {
				r.failed = true
				r.log.Debug("queuety: waking other processes failed; their idle workers find the jobs by polling", "err", err)
			}
			if !r.pending {
				r.sending = false
				r.mu.Unlock()
				return
			}
			r.pending = false
			r.mu.Unlock()
		}
	}()
}

// listen starts the listener for the first subscriber.
func (r *remoteWake) listen(wake func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners++
	if r.listeners > 1 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.stop, r.stopped = cancel, done
	go func() {
		defer close(done)
		if ln, ok := r.n.(driver.LiveJobNotifier); ok {
			_ = ln.ListenJobsLive(ctx, wake, r.live.Store)
			return
		}
		_ = r.n.ListenJobs(ctx, wake)
	}()
}

// unlisten stops the listener after the last subscriber, and waits for
// it to end.
func (r *remoteWake) unlisten() {
	r.mu.Lock()
	r.listeners--
	if r.listeners > 0 {
		r.mu.Unlock()
		return
	}
	stop, stopped := r.stop, r.stopped
	r.stop, r.stopped = nil, nil
	r.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// SubscribeScheduleWake returns a channel that receives (coalesced)
// wake-ups after this engine saved a schedule or switched one on, so a
// schedule tick sleeping until the next due schedule it knew of reads the
// next due time again, and a function that unsubscribes.
func (e *Engine) SubscribeScheduleWake() (<-chan struct{}, func()) { return e.schedWakes.subscribe() }

// wakeSchedules signals the schedule ticks that a schedule changed.
func (e *Engine) wakeSchedules() { e.schedWakes.signal() }
