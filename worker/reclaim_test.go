package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestReclaimedJobKeepsItsNewAttempt covers a job that times out while its
// handler ignores the cancellation, is retried, and is claimed again by the
// same worker while the first attempt still runs. When the first attempt
// finally returns, the second must keep its claim renewed and its context
// alive, and complete the job.
func TestReclaimedJobKeepsItsNewAttempt(t *testing.T) {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock), queuety.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Dispatch(ctx, "stubborn", nil, queuety.StartToClose(time.Minute), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	if err != nil {
		t.Fatal(err)
	}

	started := make(chan int, 2)
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	release := [3]chan struct{}{nil, make(chan struct{}), make(chan struct{})}
	secondCtxErr := make(chan error, 1)
	type outcome struct {
		attempt int
		err     error
	}
	finished := make(chan outcome, 2)
	w := worker.New(c, worker.Concurrency(2), worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond),
		worker.LeaseInterval(10*time.Millisecond), worker.WithLogger(quiet()),
		worker.WithHooks(worker.Hooks{Finished: func(j *driver.Job, err error) { finished <- outcome{j.Attempts, err} }}))
	w.HandleJob("stubborn", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		attempt := info.Attempt
		started <- attempt
		select { // the first attempt ignores its cancelled context
		case <-release[attempt]:
		case <-testDone:
		}
		if attempt == 2 {
			secondCtxErr <- context.Cause(ctx)
		}
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

	wait := func(what string) int {
		t.Helper()
		select {
		case a := <-started:
			return a
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not start", what)
			return 0
		}
	}
	if a := wait("the first attempt"); a != 1 {
		t.Fatalf("first attempt is %d", a)
	}
	// The first attempt passes its start-to-close deadline; the watchdog
	// retries the job, and this worker claims it again.
	clock.Advance(2 * time.Minute)
	if n, err := deadline.New(c).Timeouts(ctx); err != nil || n != 1 {
		t.Fatalf("Timeouts = %d, %v; want 1", n, err)
	}
	if a := wait("the second attempt"); a != 2 {
		t.Fatalf("second attempt is %d", a)
	}

	close(release[1])
	select {
	case o := <-finished:
		if o.attempt != 1 || !errors.Is(o.err, queuety.ErrStaleAttempt) {
			t.Fatalf("first outcome: attempt %d, %v; want attempt 1 rejected as stale", o.attempt, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt's result was not recorded")
	}

	// The second attempt's claim is still renewed: twice past the stale
	// timeout, stale recovery finds nothing.
	for range 2 {
		clock.Advance(queuety.DefaultStaleTimeout)
		now := clock.Now().Truncate(time.Second)
		waitFor(t, 10*time.Second, func() bool {
			j, err := c.Job(ctx, id)
			return err == nil && !j.ReservedAt.Before(now)
		})
		if n, err := deadline.New(c).Stale(ctx); err != nil || n != 0 {
			t.Fatalf("Stale = %d, %v; want 0", n, err)
		}
	}

	close(release[2])
	if err := <-secondCtxErr; err != nil {
		t.Errorf("the second attempt's context was cancelled: %v", err)
	}
	select {
	case o := <-finished:
		if o.attempt != 2 || o.err != nil {
			t.Fatalf("second outcome: attempt %d, %v; want attempt 2 recorded", o.attempt, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second attempt's result was not recorded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	j, err := c.Job(ctx, id)
	if err != nil || j.Status != queuety.JobCompleted || j.Attempts != 2 {
		t.Fatalf("job = %+v, %v; want completed after 2 attempts", j, err)
	}
	if st := w.Stats(); st.Claimed != 2 || st.Succeeded != 1 || st.Stale != 1 || st.Failed != 0 {
		t.Errorf("stats = %+v; want 2 claimed, 1 succeeded, 1 stale", st)
	}
}
