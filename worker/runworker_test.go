package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuety/queuety-go/worker"
)

// runningWorker is a worker whose Run goes on in its own goroutine.
type runningWorker struct {
	cancel context.CancelFunc // asks Run to stop, without waiting for it
	done   <-chan struct{}    // closed once Run has returned
	err    error              // what Run returned, once done is closed
}

// runWorker runs w in its own goroutine until stop, or until the test
// ends: then it stops it as stop does.
func runWorker(t *testing.T, w *worker.Worker) *runningWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r := &runningWorker{cancel: cancel, done: done}
	go func() {
		defer close(done)
		r.err = w.Run(ctx)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop asks Run to stop, waits for it to return and returns its error;
// the test fails at once if Run has not returned within 30 s.
func (r *runningWorker) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its stop")
		return nil
	}
}
