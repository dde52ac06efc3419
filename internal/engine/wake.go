package engine

import (
	"context"
	"log/slog"
	"math"
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
// A wake-up for jobs whose number and kind are known (signalJobs) wakes
// only as many idle subscribers as their claims need: each subscriber
// tells how many jobs one claim of it takes and which it claims
// (WakeTarget). Wake-ups of unknown size (another process's, a freed
// concurrency group slot, the schedule hub's) wake every subscriber.
//
// An engine has two hubs: one for new jobs (the claim loops) and one for
// saved schedules (the schedule tick), so a stream of dispatches does not
// wake the schedule tick and a saved schedule does not make every worker
// claim.
type wakeHub struct {
	mu   sync.Mutex
	subs map[*wakeSub]struct{}
}

// wakeSub is one subscriber of a hub.
type wakeSub struct {
	ch     chan struct{}
	target WakeTarget
	// state is subBusy, subIdle while the subscriber waits for a wake-up
	// with nothing to do (WakeSub.Idle), or subWoken once the hub woke it
	// from there and until it is busy again.
	state atomic.Int32
}

// The states of a subscriber.
const (
	subBusy int32 = iota
	subIdle
	subWoken
)

// WakeTarget describes a subscriber of SubscribeWakeFor, so that a
// wake-up for a few jobs wakes only as many idle subscribers as claim
// them.
type WakeTarget struct {
	// Batch reports how many jobs one claim of the subscriber takes now
	// (0: none, it has no free slot). Nil: any number.
	Batch func() int
	// Takes reports whether the subscriber claims jobs of handler on
	// queue. Nil: every job.
	Takes func(queue, handler string) bool
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
	s := h.add(WakeTarget{})
	return s.ch, func() { h.remove(s) }
}

func (h *wakeHub) add(t WakeTarget) *wakeSub {
	s := &wakeSub{ch: make(chan struct{}, 1), target: t}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*wakeSub]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *wakeHub) remove(s *wakeSub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// send gives s a wake-up without blocking (one not yet read is not
// doubled); an idle subscriber is then woken.
func (s *wakeSub) send() {
	s.state.CompareAndSwap(subIdle, subWoken)
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// signal wakes every subscriber without blocking; a subscriber that has
// not read the previous wake-up gets one, not two.
func (h *wakeHub) signal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.send()
	}
}

// signalJobs wakes subscribers for the claimable jobs of counts (by queue
// and handler; the hub takes counts over), or every subscriber when any
// is set or counts is empty. It counts first the subscribers woken from
// idle and not claimed yet, then wakes idle ones, then, while jobs are
// left over, gives a wake-up to the busy ones that claim them: one may
// have just found nothing and not yet be waiting, and must not miss these
// jobs. Each subscriber counts for as many jobs as one claim of it takes.
// A busy subscriber holding an unread wake-up is not counted first: it
// reads it only once a claim of its own found nothing.
func (h *wakeHub) signalJobs(counts map[jobnote.Key]int, any bool) {
	if any || len(counts) == 0 {
		h.signal()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offerLocked(counts, subWoken, false)
	h.offerLocked(counts, subIdle, true)
	h.offerLocked(counts, subBusy, true)
}

// passOn wakes idle subscribers (only those waiting) for the jobs of
// counts (the hub takes counts over): the claim of a woken worker filled
// its batch, so more may be waiting than the wake-up counted.
func (h *wakeHub) passOn(counts map[jobnote.Key]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offerLocked(counts, subIdle, true)
}

// offerLocked goes over the subscribers in state st while jobs are left,
// taking off left what one claim of each takes; with send, each that
// takes any gets a wake-up. Called with the hub's lock held.
func (h *wakeHub) offerLocked(left map[jobnote.Key]int, st int32, send bool) {
	for s := range h.subs {
		if len(left) == 0 {
			return
		}
		if s.state.Load() == st && s.cover(left) && send {
			s.send()
		}
	}
}

// cover takes off left the jobs one claim of s takes, and reports whether
// it takes any. Called with the hub's lock held.
func (s *wakeSub) cover(left map[jobnote.Key]int) bool {
	room := math.MaxInt
	if s.target.Batch != nil {
		room = s.target.Batch()
	}
	took := false
	for k, c := range left {
		if room <= 0 {
			break
		}
		if s.target.Takes != nil && !s.target.Takes(k.Queue, k.Handler) {
			continue
		}
		d := min(c, room)
		room -= d
		took = true
		if c -= d; c > 0 {
			left[k] = c
		} else {
			delete(left, k)
		}
	}
	return took
}

// WakeSub is a subscription to the engine's wake-ups (SubscribeWakeFor).
type WakeSub struct {
	// C receives (coalesced) wake-ups.
	C <-chan struct{}

	s     *wakeSub
	hub   *wakeHub
	close func()
}

// Idle marks the subscriber as waiting for a wake-up with nothing to do
// (on) or not: a wake-up for a few jobs goes to idle subscribers first.
func (w *WakeSub) Idle(on bool) {
	if on {
		w.s.state.Store(subIdle)
	} else {
		w.s.state.Store(subBusy)
	}
}

// Close unsubscribes.
func (w *WakeSub) Close() { w.close() }

// PassOn wakes idle subscribers for as many jobs again as claimed (a
// claim after a wake-up that filled its batch): more jobs may be waiting
// than the wake-up counted, and a worker that cannot take them all must
// not leave the others asleep.
func (w *WakeSub) PassOn(claimed []*Claimed) {
	counts := map[jobnote.Key]int{}
	for _, cj := range claimed {
		counts[jobnote.Key{Queue: cj.Job.Queue, Handler: cj.Job.Handler}]++
	}
	w.hub.passOn(counts)
}

// SubscribeWake returns a channel that receives (coalesced) wake-ups
// after this engine commits new jobs, and a function that unsubscribes.
// On a store that carries notifications between processes
// (driver.JobNotifier), the engine listens while it has subscribers, so
// jobs committed by other processes wake them too.
func (e *Engine) SubscribeWake() (<-chan struct{}, func()) {
	w := e.SubscribeWakeFor(WakeTarget{})
	return w.C, w.Close
}

// SubscribeWakeFor is SubscribeWake for a subscriber that tells what it
// claims (t), so that jobs committed in this process wake only as many
// such subscribers as claim them.
func (e *Engine) SubscribeWakeFor(t WakeTarget) *WakeSub {
	s := e.wakes.add(t)
	w := &WakeSub{C: s.ch, s: s, hub: e.wakes, close: func() { e.wakes.remove(s) }}
	if e.remote == nil {
		return w
	}
	e.remote.listen(func() {
		e.deps.heard.Store(true) // the jobs may have dependents
		e.wakes.signal()
	})
	var once sync.Once
	w.close = func() {
		e.wakes.remove(s)
		once.Do(e.remote.unlisten)
	}
	return w
}

// WakeLive reports whether jobs committed by other processes wake this
// process's idle workers now: the store carries notifications between
// processes (driver.LiveJobNotifier) and its listener, started by
// SubscribeWake, hears them. While it does not, idle workers find such
// jobs only by polling.
func (e *Engine) WakeLive() bool { return e.remote != nil && e.remote.live.Load() }

// wake signals every claim loop that jobs were committed, in this process
// and, on a store that carries notifications, in the others.
func (e *Engine) wake() {
	e.wakes.signal()
	if e.remote != nil {
		e.remote.notify()
	}
}

// wakeNoted wakes, for the claimable jobs of n, as many of this process's
// claim loops as claim them and, on a store that carries notifications,
// the other processes.
func (e *Engine) wakeNoted(n *jobnote.Note) {
	counts, any := n.Take()
	if !any && len(counts) == 0 {
		return
	}
	e.wakes.signalJobs(counts, any)
	if e.remote != nil {
		e.remote.notify()
	}
}

// noteJobs returns ctx carrying a note of the claimable jobs that the
// transactions run with it make: the pending jobs they insert (a
// workflow's next step job, for-each branches, a child workflow's first
// step, compensation and callback jobs) and the rows they make claimable
// otherwise (jobnote.Ready, jobnote.Any), the pending dependents of the
// jobs they complete among them (dependentsCompleted); and a function to
// call once they committed: it wakes as many idle workers as claim those
// jobs in this process and, through the coalesced send, the other
// processes. Jobs inserted already claimed by the committing worker (the
// eager handoff) are not pending and wake no one.
func (e *Engine) noteJobs(ctx context.Context) (context.Context, func()) {
	ctx, n := e.newNote(ctx)
	return ctx, func() { e.wakeNoted(n) }
}

// newNote returns ctx carrying a new job note with the engine's hooks:
// the dependencies of inserted jobs raise the horizon, and completions
// read their dependents (dependents.go).
func (e *Engine) newNote(ctx context.Context) (context.Context, *jobnote.Note) {
	ctx, n := jobnote.With(ctx)
	n.OnDependsOn(e.deps.raiser)
	n.OnCompleted(e.completedHook)
	return ctx, n
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
