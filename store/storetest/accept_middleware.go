package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Handler middleware and the built-ins of package middleware.
func init() {
	register("Middleware/OrderAndInvocation", testMiddlewareOrder)
	register("Middleware/ReleaseHandsBack", testMiddlewareRelease)
	register("Middleware/Timeout", testMiddlewareTimeout)
	register("Middleware/WithoutOverlappingLockHeld", testOverlapLockHeld)
	register("Middleware/WithoutOverlappingEightWorkers", testOverlapFleet)
	register("Middleware/ThrottlesExceptions", testThrottlesExceptions)
}

// recorder is a middleware that appends "<name>>" before and "<<name>"
// after the next handler to a shared list.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) mw(name string) queuety.Middleware {
	return func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			r.add(name + ">")
			out, err := next(ctx, inv)
			r.add("<" + name)
			return out, err
		}
	}
}

func testMiddlewareOrder(t *testing.T, e *Env) {
	rec := &recorder{}
	w := e.Worker(nil)
	w.Use(rec.mw("A"), rec.mw("B"))
	w.UseFor("ordered", rec.mw("C"), rec.mw("D"))
	var invs []queuety.Invocation // handlers run one at a time here: one job, then one step
	var invMu sync.Mutex
	w.UseFor("ordered", func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			invMu.Lock()
			invs = append(invs, *inv)
			invMu.Unlock()
			inv.Payload["added"] = "by middleware"
			return next(ctx, inv)
		}
	})
	var seen queuety.Payload
	w.HandleJob("ordered", func(_ context.Context, p queuety.Payload) error {
		rec.add("handler")
		seen = p
		return nil
	})
	w.UseFor("step", func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			invMu.Lock()
			invs = append(invs, *inv)
			invMu.Unlock()
			out, err := next(ctx, inv)
			out["wrapped"] = true
			return out, err
		}
	})
	w.HandleStep("step", func(_ context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"ran": true}, nil
	})
	id := e.Dispatch("ordered", queuety.State{"n": 1})
	e.Drain(w)
	assert.Equal(t, []string{"A>", "B>", "C>", "D>", "handler", "<D", "<C", "<B", "<A"}, rec.log,
		"Use before UseFor, first added outermost")
	assert.Equal(t, queuety.Payload{"n": int64(1), "added": "by middleware"}, seen, "payload changed by a middleware")
	require.Len(t, invs, 1)
	assert.Equal(t, queuety.KindJob, invs[0].Kind, "kind")
	assert.Equal(t, id, invs[0].Job.JobID, "job id")
	assert.Equal(t, "ordered", invs[0].Job.Handler, "handler")
	assert.Equal(t, 1, invs[0].Job.Attempt, "attempt")
	assert.Same(t, e.C, invs[0].Client, "client")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(id).Status, "job")

	rec.log = nil
	wf := e.Start(queuety.WorkflowDefinition{Name: "mw_flow", Steps: steps("step")}, queuety.State{"k": "v"})
	e.Drain(w)
	assert.Equal(t, []string{"A>", "B>", "<B", "<A"}, rec.log, "global middleware around a step")
	require.Len(t, invs, 2)
	assert.Equal(t, queuety.KindStep, invs[1].Kind, "kind")
	assert.Equal(t, queuety.State{"k": "v"}, invs[1].State, "public state")
	assert.Equal(t, wf, invs[1].Job.WorkflowID, "workflow id")
	assert.Equal(t, queuety.State{"k": "v", "ran": true, "wrapped": true}, e.State(wf), "output changed by a middleware")
}

func testMiddlewareRelease(t *testing.T, e *Env) {
	w := e.Worker(nil)
	var calls atomic.Int64
	w.HandleJob("later", func(context.Context, queuety.Payload) error {
		if calls.Add(1) == 1 {
			return queuety.Release(30 * time.Second)
		}
		return nil
	})
	id := e.Dispatch("later", nil, queuety.MaxAttempts(1))
	st := e.Drain(w)
	assert.Equal(t, int64(1), st.HandedBack, "handed back")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status after a release")
	assert.Equal(t, 0, j.Attempts, "a release uses no attempt")
	assert.Equal(t, Epoch.Add(30*time.Second), j.AvailableAt, "due after the release delay")
	assert.Empty(t, e.Logs(driver.LogFilter{JobID: id}), "a release writes no log rows")

	e.Clock.Advance(30 * time.Second)
	e.Drain(w)
	j = e.Job(id)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "attempts")
	assert.Equal(t, int64(2), calls.Load(), "handler calls")
}

func testMiddlewareTimeout(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.UseFor("slow", middleware.Timeout(100*time.Millisecond))
	w.UseFor("fast", middleware.Timeout(time.Minute))
	var cause error
	w.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	w.HandleJob("fast", func(context.Context, queuety.Payload) error { return nil })
	slow := e.Dispatch("slow", nil, queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(10)))
	fast := e.Dispatch("fast", nil)
	e.Drain(w)

	var te *middleware.TimeoutError
	require.ErrorAs(t, cause, &te, "the handler's ctx cause")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(fast).Status, "a handler within its timeout")
	j := e.Job(slow)
	assert.Equal(t, queuetytype.JobPending, j.Status, "timed-out attempt is retried")
	assert.Equal(t, 1, j.Attempts, "attempts")
	failed := e.Logs(driver.LogFilter{JobID: slow, Event: driver.LogFailed})
	require.Len(t, failed, 1, "failed log rows")
	assert.Equal(t, "Job exceeded maximum execution time of 100ms.", failed[0].ErrorMessage, "error_message")
	assert.Equal(t, `Queuety\Exceptions\TimeoutException`, failed[0].ErrorClass, "error_class, as Queuety PHP writes it")
	assert.Equal(t, "Job exceeded maximum execution time of 30 seconds.", (&middleware.TimeoutError{Timeout: 30 * time.Second}).Error(),
		"Queuety's message for whole seconds")
}

// lockRow reads the locks-table row of key, or nil.
func (e *Env) lockRow(key string) *driver.Lock {
	e.T.Helper()
	var l *driver.Lock
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) {
		l, err = tx.LockGet(e.Ctx, key, driver.LockNone)
		if errors.Is(err, driver.ErrNotFound) {
			l, err = nil, nil
		}
		return err
	}))
	return l
}

func testOverlapLockHeld(t *testing.T, e *Env) {
	// Another process (Queuety PHP, say) holds the key, expiring at +300 s.
	held, err := e.eng.Locks().Acquire(e.Ctx, "imports", "0123456789abcdef0123456789abcdef", 300*time.Second)
	require.NoError(t, err)
	require.True(t, held, "lock taken")
	w := e.Worker(nil)
	var runs atomic.Int64
	w.UseFor("import", middleware.WithoutOverlapping("imports", middleware.ReleaseDelay(10*time.Second)))
	w.HandleJob("import", func(context.Context, queuety.Payload) error { runs.Add(1); return nil })
	w.UseFor("import_skip", middleware.WithoutOverlapping("imports", middleware.SkipWhenLocked()))
	w.HandleJob("import_skip", func(context.Context, queuety.Payload) error { runs.Add(100); return nil })
	id := e.Dispatch("import", nil)
	skip := e.Dispatch("import_skip", nil)
	e.Drain(w)
	assert.Zero(t, runs.Load(), "handler runs while the key is locked")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "handed back")
	assert.Equal(t, 0, j.Attempts, "no attempt used")
	assert.Equal(t, Epoch.Add(10*time.Second), j.AvailableAt, "due after the release delay")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(skip).Status, "SkipWhenLocked completes the job without running it")

	e.Clock.Advance(10 * time.Second)
	e.Drain(w)
	assert.Zero(t, runs.Load(), "handler runs while the key is still locked")
	assert.Equal(t, Epoch.Add(20*time.Second), e.Job(id).AvailableAt, "released again")

	// The lock expires at +300 s (Queuety's release_after): then it is
	// taken over, and deleted after the run.
	e.Clock.Advance(291 * time.Second) // +301 s: past the expiry (expires_at < now, in whole seconds)
	e.Drain(w)
	assert.Equal(t, int64(1), runs.Load(), "handler runs once the lock expired")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(id).Status, "job")
	assert.Nil(t, e.lockRow("imports"), "lock row after the run")
}

func testOverlapFleet(t *testing.T, e *Env) {
	const jobs, workers = 16, 8
	var reqs []queuety.JobRequest
	for i := range jobs {
		reqs = append(reqs, queuety.JobRequest{Handler: "exclusive", Payload: queuety.State{"i": i}})
	}
	ids, err := e.C.DispatchMany(e.Ctx, reqs)
	require.NoError(t, err)

	var running, maxRunning atomic.Int64
	var first atomic.Bool
	released := make(chan struct{})
	var releasedOnce sync.Once
	var mu sync.Mutex
	runs := map[int64]int{}
	reg := queuety.NewRegistry()
	reg.UseFor("exclusive", middleware.WithoutOverlapping("fleet-key", middleware.ReleaseDelay(0)))
	reg.HandleJob("exclusive", func(ctx context.Context, _ queuety.Payload) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
		}
		if first.CompareAndSwap(false, true) {
			// Hold the key until another invocation found it locked.
			select {
			case <-released:
			case <-time.After(time.Minute):
				t.Error("no invocation was handed back while the key was held")
			}
		}
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		runs[info.JobID]++
		mu.Unlock()
		return nil
	})
	hooks := worker.WithHooks(worker.Hooks{Finished: func(_ *driver.Job, err error) {
		var re *queuety.ReleaseError
		if errors.As(err, &re) {
			releasedOnce.Do(func() { close(released) })
		}
	}})
	var wg sync.WaitGroup
	for i, c := range e.Clients(workers) {
		w := e.Worker(c, worker.WithRegistry(reg), hooks)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.RunOnce(e.Ctx, 2*time.Minute)
			assert.NoErrorf(t, err, "worker %d", i)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), maxRunning.Load(), "invocations running at once under one key")
	for _, id := range ids {
		assert.Equalf(t, 1, runs[id], "runs of job %d", id)
		j := e.Job(id)
		assert.Equalf(t, queuetytype.JobCompleted, j.Status, "job %d", id)
		assert.Equalf(t, 1, j.Attempts, "attempts of job %d: releases use none", id)
	}
	assert.Nil(t, e.lockRow("fleet-key"), "lock row at the end")
}

func testThrottlesExceptions(t *testing.T, e *Env) {
	w := e.Worker(nil, worker.Concurrency(1))
	w.UseFor("flaky", middleware.ThrottlesExceptions(2, 10*time.Minute))
	var calls atomic.Int64
	w.HandleJob("flaky", func(context.Context, queuety.Payload) error {
		return fmt.Errorf("upstream down (call %d)", calls.Add(1))
	})
	var ids []int64
	for i := range 3 {
		ids = append(ids, e.Dispatch("flaky", queuety.State{"i": i}, queuety.MaxAttempts(1)))
	}
	e.Drain(w)
	assert.Equal(t, int64(2), calls.Load(), "handler calls before the throttle")
	for _, id := range ids {
		assert.Equal(t, queuetytype.JobBuried, e.Job(id).Status, "job %d", id)
	}
	third := e.Logs(driver.LogFilter{JobID: ids[2], Event: driver.LogBuried})
	require.Len(t, third, 1)
	assert.Equal(t, "Too many exceptions for flaky (2 in 10 minutes). Throttled.", third[0].ErrorMessage, "Queuety's message")
	assert.Equal(t, "RuntimeException", third[0].ErrorClass, "error_class")
	row := e.lockRow("throttle_exceptions:flaky")
	require.NotNil(t, row, "counter row")
	assert.Equal(t, "2", row.Owner, "count, in the owner column as Queuety keeps it")
	assert.Equal(t, Epoch.Add(10*time.Minute), row.ExpiresAt, "window end")

	// After the window the count starts again.
	e.Clock.Advance(10*time.Minute + time.Second)
	e.Dispatch("flaky", nil, queuety.MaxAttempts(1))
	e.Drain(w)
	assert.Equal(t, int64(3), calls.Load(), "handler runs again after the window")
	assert.Equal(t, "1", e.lockRow("throttle_exceptions:flaky").Owner, "count restarted")
}
