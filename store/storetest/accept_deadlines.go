package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Deadlines/SweepFailsExpiredWorkflow", testDeadlineSweep)
	register("Deadlines/NeverForWorkflowCompletedInTime", testDeadlineCompletedInTime)
	register("Deadlines/ConcurrentSweepersCallHandlerOnce", testDeadlineConcurrentSweepers)
	register("Deadlines/ClaimAfterDeadlineFailsWorkflow", testDeadlineAtClaim)
	register("Deadlines/ResultAfterDeadlineIsDiscarded", testDeadlineAtCommit)
	register("Deadlines/RunningStepContextCancelled", testDeadlineCancelsContext)
	register("Deadlines/HandlerErrorAndPanicSwallowed", testDeadlineHandlerErrors)
	register("Deadlines/RetryPastTheDeadlineIsRefused", testDeadlineRetry)
	register("Deadlines/WaitingWorkflowExpires", testDeadlineWhileWaiting)
	register("Deadlines/RunTimeout", testRunTimeout)
}

// expiring is a two-step workflow with a one-hour deadline and a callback.
func expiring(name string) queuety.WorkflowDefinition {
	return queuety.WorkflowDefinition{Name: name, Steps: steps("generate", "send"), ExecutionTimeout: time.Hour,
		OnDeadline: "escalate", Queue: "invoices"}
}

func testDeadlineSweep(t *testing.T, e *Env) {
	id := e.Start(expiring("invoice_collection"), queuety.State{"customer_id": 501})
	wf := e.Workflow(id)
	assert.Equal(t, Epoch.Add(time.Hour), wf.DeadlineAt, "deadline_at")
	raw := e.rawState(id)
	secs, _ := raw.Get("_deadline_seconds")
	assert.Equal(t, any(int64(3600)), secs, "_deadline_seconds")
	onDeadline, _ := raw.Get("_on_deadline")
	assert.Equal(t, any("escalate"), onDeadline, "_on_deadline")

	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"invoice_number": "INV-2026-0042", "amount": 120.0}, nil
	})
	var calls []queuety.State
	w.HandleDeadline("escalate", func(_ context.Context, s queuety.State) error { calls = append(calls, s); return nil })
	e.Drain(w) // step 0 runs; step 1 ("send") has no handler here and stays pending
	assert.Equal(t, 0, e.sweep(), "expired before the deadline")
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 1, e.sweep(), "expired at the deadline")
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "error_message")
	assert.Equal(t, Epoch.Add(time.Hour), wf.FailedAt, "failed_at")
	assert.Equal(t, 1, wf.CurrentStep, "current_step")
	send := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "send"})
	assert.Equal(t, queuetytype.JobBuried, send.Status, "pending step job")
	assert.Equal(t, "Deadline exceeded", send.ErrorMessage, "pending step job error")
	logs := e.Logs(driver.LogFilter{WorkflowID: id})
	require.GreaterOrEqual(t, len(logs), 2, "workflow logs: want at least workflow_failed and workflow_deadline_exceeded")
	last2 := logs[len(logs)-2:]
	assert.Equal(t, driver.LogWorkflowFailed, last2[0].Event, "workflow_failed")
	require.NotNil(t, last2[0].JobID, "workflow_failed job_id (Queuety writes 0)")
	assert.Equal(t, int64(0), *last2[0].JobID, "workflow_failed job_id (Queuety writes 0)")
	assert.Equal(t, "", last2[0].Handler, "workflow_failed handler")
	assert.Equal(t, "default", last2[0].Queue, "workflow_failed queue")
	assert.Equal(t, driver.LogWorkflowDeadlineExceeded, last2[1].Event, "workflow_deadline_exceeded")
	assert.Equal(t, "invoice_collection", last2[1].Handler, "workflow_deadline_exceeded handler")
	assert.Equal(t, "invoices", last2[1].Queue, "workflow_deadline_exceeded queue")
	fails := e.failures(id, 0)
	require.Len(t, fails, 1, "failures")
	assert.Equal(t, driver.FailureTimeout, fails[0].Category, "failure category")
	assert.Equal(t, queuetytype.TimeoutExecution, fails[0].TimeoutKind, "failure timeout_kind")
	e.Drain(w)
	require.Len(t, calls, 1, "deadline handler calls")
	want := `map[amount:120 customer_id:501 invoice_number:INV-2026-0042]`
	assert.Equal(t, want, fmt.Sprint(calls[0]), "handler got the public state")
	assert.Equal(t, 0, e.sweep(), "failed workflows swept again")
	e.Drain(w)
	assert.Len(t, calls, 1, "handler calls after another sweep")
}

func testDeadlineCompletedInTime(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	var calls atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleStep("send", func(context.Context, queuety.State) (queuety.State, error) {
		e.Clock.Advance(59 * time.Minute) // finishes one minute early
		return nil, nil
	})
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { calls.Add(1); return nil })
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	e.Clock.Advance(2 * time.Hour)
	assert.Equal(t, 0, e.sweep(), "completed workflows expired")
	e.Drain(w)
	assert.Equal(t, int64(0), calls.Load(), "handler calls")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
}

func testDeadlineConcurrentSweepers(t *testing.T, e *Env) {
	const n = 1000
	def := queuety.WorkflowDefinition{Name: "bulk", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "once"}
	for i := range n {
		_, err := e.C.DispatchWorkflow(e.Ctx, def, queuety.State{"n": i})
		require.NoError(t, err)
	}
	e.Clock.Advance(2 * time.Minute)
	const sweepers = 8
	clients := e.Clients(sweepers)
	var expired atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, err := deadline.New(c).Deadlines(context.Background())
			assert.NoError(t, err, "sweep")
			expired.Add(int64(got))
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(n), expired.Load(), "workflows expired across sweepers")

	calls := make([]atomic.Int64, n)
	var bad atomic.Int64
	var workers sync.WaitGroup
	for _, c := range clients {
		w := e.Worker(c, worker.Concurrency(8))
		w.HandleDeadline("once", func(_ context.Context, s queuety.State) error {
			i, ok := s.Int("n")
			if !ok || i < 0 || i >= n {
				bad.Add(1)
				return nil
			}
			calls[i].Add(1)
			return nil
		})
		workers.Add(1)
		go func() {
			defer workers.Done()
			_, err := w.RunOnce(context.Background(), time.Minute)
			assert.NoError(t, err, "RunOnce")
		}()
	}
	workers.Wait()
	assert.Equal(t, int64(0), bad.Load(), "calls with a bad state")
	for i := range calls {
		assert.Equalf(t, int64(1), calls[i].Load(), "deadline handler calls for workflow %d", i)
	}
	exceeded := e.Logs(driver.LogFilter{Event: driver.LogWorkflowDeadlineExceeded, Limit: 5000})
	assert.Len(t, exceeded, n, "workflow_deadline_exceeded rows")
}

func testDeadlineAtClaim(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	var ran, called atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", counter(&ran, nil))
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { called.Add(1); return nil })
	e.Clock.Advance(time.Hour + time.Second) // nobody swept
	e.Drain(w)
	assert.Equal(t, int64(0), ran.Load(), "step ran past the deadline")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "error")
	assert.Equal(t, int64(1), called.Load(), "deadline handler calls")
}

func testDeadlineAtCommit(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	var sent atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) {
		e.Clock.Advance(2 * time.Hour) // the step overruns the deadline
		return queuety.State{"late": true}, nil
	})
	w.HandleStep("send", counter(&sent, nil))
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { return nil })
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, 0, wf.CurrentStep, "never advanced past the step")
	assert.Equal(t, int64(0), sent.Load(), "next step ran")
	assert.NotContains(t, e.State(id), "late", "the late result was merged")
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	require.Len(t, jobs, 1, "jobs (no next step enqueued)")
	assert.Equal(t, queuetytype.JobBuried, jobs[0].Status, "the step's job")
	// The overrunning attempt leaves a trace: its log rows and a failure
	// that names the job, step and attempt.
	assert.Equal(t, "started,buried", strings.Join(e.Events(driver.LogFilter{JobID: jobs[0].ID}), ","), "step logs")
	f := e.failures(id, 0)
	require.Len(t, f, 1, "failures")
	assert.Equal(t, jobs[0].ID, f[0].JobID, "failure job_id")
	if assert.NotNil(t, f[0].StepIndex, "failure step_index") {
		assert.Equal(t, 0, *f[0].StepIndex, "failure step_index")
	}
	assert.Equal(t, 1, f[0].Attempt, "failure attempt")
}

func testDeadlineCancelsContext(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	started := make(chan struct{})
	causes := make(chan error, 1)
	w := e.Worker(nil, worker.Queues("invoices"), worker.LeaseInterval(10*time.Millisecond))
	w.HandleStep("generate", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	})
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { return nil })
	drained := make(chan error, 1)
	go func() {
		_, err := w.RunOnce(e.Ctx, time.Minute)
		drained <- err
	}()
	<-started
	e.Clock.Advance(2 * time.Hour)
	sweeper := e.Client()
	n, err := deadline.New(sweeper).Deadlines(e.Ctx)
	assert.NoError(t, err, "sweep")
	assert.Equal(t, 1, n, "workflows expired by the sweep")
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, queuetytype.ErrDeadlineExceeded, "context cause")
		assert.ErrorIs(t, cause, queuetytype.ErrLeaseLost, "context cause")
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the running step's context was not cancelled")
	}
	require.NoError(t, <-drained, "RunOnce")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
}

func testDeadlineHandlerErrors(t *testing.T, e *Env) {
	a := e.Start(queuety.WorkflowDefinition{Name: "a", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "fails"}, nil)
	b := e.Start(queuety.WorkflowDefinition{Name: "b", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "panics"}, nil)
	var fails, panics atomic.Int64
	w := e.Worker(nil)
	w.HandleDeadline("fails", func(context.Context, queuety.State) error { fails.Add(1); return errors.New("pager down") })
	w.HandleDeadline("panics", func(context.Context, queuety.State) error { panics.Add(1); panic("bad handler") })
	e.Clock.Advance(2 * time.Minute)
	assert.Equal(t, 2, e.sweep(), "workflows expired")
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	assert.Equal(t, int64(1), fails.Load(), "failing handler calls")
	assert.Equal(t, int64(1), panics.Load(), "panicking handler calls")
	for _, id := range []int64{a, b} {
		wf := e.Workflow(id)
		assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
		assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "error")
	}
	cb := e.OneJob(driver.JobFilter{Handler: "fails"})
	assert.Equal(t, queuetytype.JobBuried, cb.Status, "callback job")
	assert.Equal(t, "pager down", cb.ErrorMessage, "callback error recorded")
	assert.Equal(t, queuetytype.JobBuried, e.OneJob(driver.JobFilter{Handler: "panics"}).Status, "panicking callback job")
}

// testDeadlineRetry: a retry never extends the execution deadline, so a
// workflow past it is refused a retry (it would fail again at once) and
// keeps its row as it was; a fork, which has no deadline, runs the failed
// step again.
func testDeadlineRetry(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 1, e.sweep(), "workflows expired")
	before := e.Workflow(id)
	err := e.C.RetryWorkflow(e.Ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrInvalidState, "retry past the deadline")
	assert.Contains(t, err.Error(), "execution deadline passed at "+Epoch.Add(time.Hour).Format(time.RFC3339), "the error names the deadline")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status after the refused retry")
	assert.Equal(t, before.RunNumber, wf.RunNumber, "no new run")
	assert.Equal(t, Epoch.Add(time.Hour), wf.DeadlineAt, "deadline not extended")
	var ran atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", counter(&ran, nil))
	w.HandleStep("send", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { return nil })
	e.Drain(w)
	assert.Equal(t, int64(0), ran.Load(), "step ran after the refused retry")

	fork, err := e.C.ForkWorkflow(e.Ctx, id)
	require.NoError(t, err, "fork of the expired workflow")
	assert.True(t, e.Workflow(fork).DeadlineAt.IsZero(), "the fork has no execution deadline")
	e.Drain(w)
	assert.Equal(t, int64(1), ran.Load(), "the fork ran the step")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(fork).Status, "fork status")
}

func testDeadlineWhileWaiting(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "approval", ExecutionTimeout: time.Hour, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signal: "approve", Timeout: 2 * time.Hour},
		{Type: queuetytype.StepSingle, Handler: "after"},
	}}
	id := e.Start(def, nil)
	w := e.Worker(nil)
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "status")
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 1, e.sweep(), "waiting workflows past their deadline expired")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, time.Time{}, wf.WaitDeadlineAt, "wait timer cancelled")
	cancelled := false
	for _, l := range e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug}) {
		cancelled = cancelled || strings.Contains(string(l.Context), "timer_cancelled")
	}
	assert.True(t, cancelled, "the cancelled wait timer was not recorded")
	e.Clock.Advance(2 * time.Hour)
	assert.Equal(t, 0, e.waitTimers(), "cancelled timers fired")
}

func testRunTimeout(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "runs", Steps: steps("slow"), ExecutionTimeout: time.Hour, RunTimeout: 10 * time.Minute}
	id := e.Start(def, nil)
	wf := e.Workflow(id)
	assert.Equal(t, Epoch.Add(10*time.Minute), wf.RunDeadlineAt, "run deadline")
	e.Clock.Advance(11 * time.Minute)
	assert.Equal(t, 1, e.sweep(), "workflows expired by the run timeout")
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Run deadline exceeded", wf.ErrorMessage, "error")
	fails := e.failures(id, 0)
	require.Len(t, fails, 1, "failures")
	assert.Equal(t, queuetytype.TimeoutRun, fails[0].TimeoutKind, "failure timeout_kind")
	assert.Equal(t, 1, fails[0].RunNumber, "failure run_number")
	// A retry starts run 2 with a fresh run deadline, capped at the execution deadline.
	e.Clock.Advance(45 * time.Minute)
	require.NoError(t, e.C.RetryWorkflow(e.Ctx, id))
	wf = e.Workflow(id)
	assert.Equal(t, 2, wf.RunNumber, "run")
	assert.Equal(t, Epoch.Add(time.Hour), wf.RunDeadlineAt, "run deadline capped at the execution deadline")
}
