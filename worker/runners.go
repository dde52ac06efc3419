package worker

import "sync"

// runners run a worker's started jobs, each job as soon as it is started,
// on goroutines that take the next started job when theirs returns,
// instead of one new goroutine per job.
//
// A runner that takes a job while more are waiting and no other runner
// is free to take them first starts another runner, so a job never waits
// behind a handler that is still running: the jobs of a claim start about
// as fast as one goroutine per job would start them, however long their
// handlers run. When handlers return quickly, as the no-op jobs of a
// drain do, a few runners take a whole claim between them, and the
// goroutine starts, exits and scheduler wake-ups of one goroutine per
// job are saved. A runner with nothing left to take exits.
type runners struct {
	mu      sync.Mutex
	queue   []func()
	head    int
	free    int // runners not running a job
	running int // runners in all
	spawned int // runners ever started
}

// start queues fn to run at once.
func (r *runners) start(fn func()) {
	r.mu.Lock()
	r.queue = append(r.queue, fn)
	spawn := r.needRunnerLocked()
	r.mu.Unlock()
	if spawn {
		go r.run()
	}
}

// take returns the next queued job, or nil (and the runner leaves) when
// none is queued; it starts another runner when jobs remain queued and
// no runner is free to take them.
func (r *runners) take() (fn func(), spawn bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.head == len(r.queue) {
		r.queue, r.head = r.queue[:0], 0
		r.free--
		r.running--
		return nil, false
	}
	fn = r.queue[r.head]
	r.queue[r.head] = nil
	r.head++
	if r.head > 64 && 2*r.head > len(r.queue) { // keep a queue that never empties from growing
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue, r.head = r.queue[:n], 0
	}
	r.free--
	return fn, r.needRunnerLocked()
}

// needRunnerLocked reports whether jobs are queued while no runner is
// free to take them, and if so counts the runner the caller must start
// (free to take a job) once it has unlocked r.mu.
func (r *runners) needRunnerLocked() bool {
	if r.head == len(r.queue) || r.free > 0 {
		return false
	}
	r.free++
	r.running++
	r.spawned++
	return true
}

// run is one runner.
func (r *runners) run() {
	ok := false
	defer func() {
		if !ok { // a job ended this goroutine (runtime.Goexit): the runner is gone
			r.mu.Lock()
			r.running--
			spawn := r.needRunnerLocked()
			r.mu.Unlock()
			if spawn {
				go r.run()
			}
		}
	}()
	for {
		fn, spawn := r.take()
		if fn == nil {
			ok = true
			return
		}
		if spawn {
			go r.run()
		}
		fn()
		r.mu.Lock()
		r.free++
		r.mu.Unlock()
	}
}
