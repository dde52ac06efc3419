package worker

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
)

// A store with serial writers (driver.StoreInfo.SerialWriters: SQLite)
// runs one write transaction at a time, and each transaction has a cost
// of its own beyond the rows it writes. A worker on such a store makes its
// claims and its recordings take turns, and each forms its batch once its
// turn has come: a claim takes every slot freed while the completer
// wrote, and the completer records every success that came in while the
// claim ran. Without turns, each would fix its batch first and then wait
// for the other's transaction, and a burst of short jobs would be claimed
// and recorded a few at a time.

// serialGather bounds how long the completer, on a store with serial
// writers, waits for more successes while handlers are still running.
const serialGather = 2 * time.Millisecond

// serialWrites are a worker's write turns on a store with serial writers.
// A nil *serialWrites (other stores) does nothing.
type serialWrites struct {
	// turn holds one token. A channel hands a token sent to it to the
	// goroutine that has waited longest, so the fetch loop and the
	// completer alternate while both have work.
	turn chan struct{}
	// idle receives a signal when the last running handler finishes.
	idle chan struct{}
}

func newSerialWrites(serial bool) *serialWrites {
	if !serial {
		return nil
	}
	s := &serialWrites{turn: make(chan struct{}, 1), idle: make(chan struct{}, 1)}
	s.turn <- struct{}{}
	return s
}

// take waits for the turn to write; it reports false if ctx ends first.
func (s *serialWrites) take(ctx context.Context) bool {
	if s == nil {
		return true
	}
	select {
	case <-s.turn:
		return true
	case <-ctx.Done():
		return false
	}
}

// give ends a turn taken with take.
func (s *serialWrites) give() {
	if s != nil {
		s.turn <- struct{}{}
	}
}

// allFinished notes that no handler is running (called with the worker's
// mutex held).
func (s *serialWrites) allFinished() {
	if s == nil {
		return
	}
	select {
	case s.idle <- struct{}{}:
	default:
	}
}

// gather starts the completer's batch with first. On a store with serial
// writers it first waits, for up to serialGather, for the successes of
// the handlers still running (the jobs of one claim tend to finish
// together), then for the turn to write; the completer then adds what
// has come in meanwhile.
func (w *Worker) gather(first *engine.Result) []*engine.Result {
	batch := []*engine.Result{first}
	s := w.serial
	if s == nil {
		return batch
	}
	select { // a signal from before this batch
	case <-s.idle:
	default:
	}
	timer := time.NewTimer(serialGather)
	defer timer.Stop()
wait:
	for len(batch) < BatchSizeMax && w.busyCount() > 0 {
		select {
		case r, ok := <-w.results:
			if !ok {
				break wait
			}
			batch = append(batch, r)
		case <-s.idle:
		case <-timer.C:
			break wait
		}
	}
	s.take(context.Background())
	return batch
}

// freedWithin waits for a handler to finish for up to d; it reports
// false if d passed first.
func (w *Worker) freedWithin(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.freed:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}
