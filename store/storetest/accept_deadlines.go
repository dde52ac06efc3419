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

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
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
	register("Deadlines/RetryDoesNotExtendDeadline", testDeadlineRetry)
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
	Equal(t, "deadline_at", wf.DeadlineAt, Epoch.Add(time.Hour))
	raw := e.rawState(id)
	secs, _ := raw.Get("_deadline_seconds")
	Equal(t, "_deadline_seconds", secs, any(int64(3600)))
	onDeadline, _ := raw.Get("_on_deadline")
	Equal(t, "_on_deadline", onDeadline, any("escalate"))

	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"invoice_number": "INV-2026-0042", "amount": 120.0}, nil
	})
	var calls []queuety.State
	w.HandleDeadline("escalate", func(_ context.Context, s queuety.State) error { calls = append(calls, s); return nil })
	e.Drain(w) // step 0 runs; step 1 ("send") has no handler here and stays pending
	Equal(t, "expired before the deadline", e.sweep(), 0)
	e.Clock.Advance(time.Hour)
	Equal(t, "expired at the deadline", e.sweep(), 1)
	wf = e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "error_message", wf.ErrorMessage, "Deadline exceeded")
	Equal(t, "failed_at", wf.FailedAt, Epoch.Add(time.Hour))
	Equal(t, "current_step", wf.CurrentStep, 1)
	send := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "send"})
	Equal(t, "pending step job", send.Status, queuety.JobBuried)
	Equal(t, "pending step job error", send.ErrorMessage, "Deadline exceeded")
	logs := e.Logs(driver.LogFilter{WorkflowID: id})
	if len(logs) < 2 {
		t.Fatalf("workflow logs = %d rows, want at least workflow_failed and workflow_deadline_exceeded", len(logs))
	}
	last2 := logs[len(logs)-2:]
	Equal(t, "workflow_failed", last2[0].Event, driver.LogWorkflowFailed)
	Equal(t, "workflow_failed job_id (Queuety writes 0)", *last2[0].JobID, int64(0))
	Equal(t, "workflow_failed handler", last2[0].Handler, "")
	Equal(t, "workflow_failed queue", last2[0].Queue, "default")
	Equal(t, "workflow_deadline_exceeded", last2[1].Event, driver.LogWorkflowDeadlineExceeded)
	Equal(t, "workflow_deadline_exceeded handler", last2[1].Handler, "invoice_collection")
	Equal(t, "workflow_deadline_exceeded queue", last2[1].Queue, "invoices")
	fails := e.failures(id, 0)
	if len(fails) != 1 || fails[0].Category != driver.FailureTimeout || fails[0].TimeoutKind != queuety.TimeoutExecution {
		t.Fatalf("failures = %+v", fails)
	}
	e.Drain(w)
	if len(calls) != 1 {
		t.Fatalf("deadline handler called %d times", len(calls))
	}
	want := `map[amount:120 customer_id:501 invoice_number:INV-2026-0042]`
	Equal(t, "handler got the public state", fmt.Sprint(calls[0]), want)
	Equal(t, "failed workflows swept again", e.sweep(), 0)
	e.Drain(w)
	Equal(t, "handler calls after another sweep", len(calls), 1)
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
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	e.Clock.Advance(2 * time.Hour)
	Equal(t, "completed workflows expired", e.sweep(), 0)
	e.Drain(w)
	Equal(t, "handler calls", calls.Load(), int64(0))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
}

func testDeadlineConcurrentSweepers(t *testing.T, e *Env) {
	const n = 1000
	def := queuety.WorkflowDefinition{Name: "bulk", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "once"}
	for i := range n {
		if _, err := e.C.DispatchWorkflow(e.Ctx, def, queuety.State{"n": i}); err != nil {
			t.Fatal(err)
		}
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
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			expired.Add(int64(got))
		}()
	}
	close(start)
	wg.Wait()
	Equal(t, "workflows expired across sweepers", expired.Load(), int64(n))

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
			if _, err := w.RunOnce(context.Background(), time.Minute); err != nil {
				t.Errorf("RunOnce: %v", err)
			}
		}()
	}
	workers.Wait()
	Equal(t, "calls with a bad state", bad.Load(), int64(0))
	for i := range calls {
		if got := calls[i].Load(); got != 1 {
			t.Fatalf("deadline handler for workflow %d called %d times", i, got)
		}
	}
	exceeded := e.Logs(driver.LogFilter{Event: driver.LogWorkflowDeadlineExceeded, Limit: 5000})
	Equal(t, "workflow_deadline_exceeded rows", len(exceeded), n)
}

func testDeadlineAtClaim(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	var ran, called atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", counter(&ran, nil))
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { called.Add(1); return nil })
	e.Clock.Advance(time.Hour + time.Second) // nobody swept
	e.Drain(w)
	Equal(t, "step ran past the deadline", ran.Load(), int64(0))
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "error", wf.ErrorMessage, "Deadline exceeded")
	Equal(t, "deadline handler calls", called.Load(), int64(1))
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
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "never advanced past the step", wf.CurrentStep, 0)
	Equal(t, "next step ran", sent.Load(), int64(0))
	if _, ok := e.State(id)["late"]; ok {
		t.Fatal("the late result was merged")
	}
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	Equal(t, "jobs (no next step enqueued)", len(jobs), 1)
	Equal(t, "the step's job", jobs[0].Status, queuety.JobBuried)
	// The overrunning attempt leaves a trace: its log rows and a failure
	// that names the job, step and attempt.
	Equal(t, "step logs", strings.Join(e.Events(driver.LogFilter{JobID: jobs[0].ID}), ","), "started,buried")
	f := e.failures(id, 0)
	if len(f) != 1 || f[0].JobID != jobs[0].ID || f[0].StepIndex == nil || *f[0].StepIndex != 0 || f[0].Attempt != 1 {
		t.Fatalf("failures = %+v", f)
	}
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Drain(w)
	}()
	<-started
	e.Clock.Advance(2 * time.Hour)
	if n, err := deadline.New(e.Client()).Deadlines(e.Ctx); err != nil || n != 1 {
		t.Errorf("sweep: %d, %v", n, err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, queuety.ErrDeadlineExceeded) || !errors.Is(cause, queuety.ErrLeaseLost) {
			t.Fatalf("context cause = %v", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the running step's context was not cancelled")
	}
	<-done
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowFailed)
}

func testDeadlineHandlerErrors(t *testing.T, e *Env) {
	a := e.Start(queuety.WorkflowDefinition{Name: "a", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "fails"}, nil)
	b := e.Start(queuety.WorkflowDefinition{Name: "b", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "panics"}, nil)
	var fails, panics atomic.Int64
	w := e.Worker(nil)
	w.HandleDeadline("fails", func(context.Context, queuety.State) error { fails.Add(1); return errors.New("pager down") })
	w.HandleDeadline("panics", func(context.Context, queuety.State) error { panics.Add(1); panic("bad handler") })
	e.Clock.Advance(2 * time.Minute)
	Equal(t, "workflows expired", e.sweep(), 2)
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	Equal(t, "failing handler calls", fails.Load(), int64(1))
	Equal(t, "panicking handler calls", panics.Load(), int64(1))
	for _, id := range []int64{a, b} {
		wf := e.Workflow(id)
		Equal(t, "status", wf.Status, queuety.WorkflowFailed)
		Equal(t, "error", wf.ErrorMessage, "Deadline exceeded")
	}
	cb := e.OneJob(driver.JobFilter{Handler: "fails"})
	Equal(t, "callback job", cb.Status, queuety.JobBuried)
	Equal(t, "callback error recorded", cb.ErrorMessage, "pager down")
	Equal(t, "panicking callback job", e.OneJob(driver.JobFilter{Handler: "panics"}).Status, queuety.JobBuried)
}

func testDeadlineRetry(t *testing.T, e *Env) {
	id := e.Start(expiring("wf"), nil)
	e.Clock.Advance(time.Hour)
	Equal(t, "workflows expired", e.sweep(), 1)
	if err := e.C.RetryWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	wf := e.Workflow(id)
	Equal(t, "status after retry", wf.Status, queuety.WorkflowRunning)
	Equal(t, "deadline not extended", wf.DeadlineAt, Epoch.Add(time.Hour))
	var ran atomic.Int64
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleStep("generate", counter(&ran, nil))
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error { return nil })
	e.Drain(w)
	Equal(t, "step ran after retry past the deadline", ran.Load(), int64(0))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowFailed)
}

func testDeadlineWhileWaiting(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "approval", ExecutionTimeout: time.Hour, Steps: []queuety.WorkflowStep{
		{Type: queuety.StepWaitForSignal, Signal: "approve", Timeout: 2 * time.Hour},
		{Type: queuety.StepSingle, Handler: "after"},
	}}
	id := e.Start(def, nil)
	w := e.Worker(nil)
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowWaitingForSignal)
	e.Clock.Advance(time.Hour)
	Equal(t, "waiting workflows past their deadline expired", e.sweep(), 1)
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "wait timer cancelled", wf.WaitDeadlineAt, time.Time{})
	cancelled := false
	for _, l := range e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug}) {
		cancelled = cancelled || strings.Contains(string(l.Context), "timer_cancelled")
	}
	if !cancelled {
		t.Fatal("the cancelled wait timer was not recorded")
	}
	e.Clock.Advance(2 * time.Hour)
	Equal(t, "cancelled timers fired", e.waitTimers(), 0)
}

func testRunTimeout(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "runs", Steps: steps("slow"), ExecutionTimeout: time.Hour, RunTimeout: 10 * time.Minute}
	id := e.Start(def, nil)
	wf := e.Workflow(id)
	Equal(t, "run deadline", wf.RunDeadlineAt, Epoch.Add(10*time.Minute))
	e.Clock.Advance(11 * time.Minute)
	Equal(t, "workflows expired by the run timeout", e.sweep(), 1)
	wf = e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "error", wf.ErrorMessage, "Run deadline exceeded")
	fails := e.failures(id, 0)
	if len(fails) != 1 || fails[0].TimeoutKind != queuety.TimeoutRun || fails[0].RunNumber != 1 {
		t.Fatalf("failures = %+v", fails)
	}
	// A retry starts run 2 with a fresh run deadline, capped at the execution deadline.
	e.Clock.Advance(45 * time.Minute)
	if err := e.C.RetryWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	wf = e.Workflow(id)
	Equal(t, "run", wf.RunNumber, 2)
	Equal(t, "run deadline capped at the execution deadline", wf.RunDeadlineAt, Epoch.Add(time.Hour))
}
