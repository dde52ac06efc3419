package storetest

// Deadline handlers in fleets where not every worker has them: a process
// whose workers lack a running workflow's deadline handler leaves the
// expiry to a worker that has it for the handoff period, and Go deadline
// handlers of workflows another engine (Queuety PHP's sweep) expired are
// enqueued once.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Deadlines/HandoffToWorkerWithHandler", testHandoffToWorkerWithHandler)
	register("Deadlines/HandoffEndsAfterPeriod", testHandoffEnds)
	register("Deadlines/HandoffOnlyForRunning", testHandoffOnlyRunning)
	register("Deadlines/ForeignExpiryRunsGoHandlerOnce", testForeignExpiryOnce)
}

// phpHandled is a workflow whose deadline handler only "PHP" has: no Go
// worker in these tests registers it.
func phpHandled(name string) queuety.WorkflowDefinition {
	return queuety.WorkflowDefinition{Name: name, Steps: steps("generate", "send"), ExecutionTimeout: time.Hour,
		OnDeadline: `Vendor\Deadline\Escalate`}
}

func testHandoffToWorkerWithHandler(t *testing.T, e *Env) {
	id := e.Start(phpHandled("invoice"), queuety.State{"customer": 7})
	w := e.Worker(nil)
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) {
		e.Clock.Advance(time.Hour + time.Minute) // the step overruns the deadline
		return queuety.State{"generated": true}, nil
	})
	w.HandleStep("send", func(context.Context, queuety.State) (queuety.State, error) {
		t.Error("send ran after the deadline")
		return nil, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "left running for the sweep that has the handler")
	assert.Equal(t, 0, wf.CurrentStep, "did not advance past the deadline")
	gen := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "generate"})
	assert.Equal(t, queuetytype.JobBuried, gen.Status, "the overrunning step's job")
	assert.Equal(t, "Deadline exceeded", gen.ErrorMessage, "the overrunning step's job")
	assert.Empty(t, e.Jobs(driver.JobFilter{Handler: `Vendor\Deadline\Escalate`}), "handler jobs enqueued by a process without it")
	assert.Equal(t, 0, e.sweep(), "expired by a process without the handler")
	assert.Empty(t, e.failures(id, 0), "failures written by a process without the handler")
	runtime.KeepAlive(w) // the engine holds workers' registrations weakly

	// Another process whose worker has the handler expires it at once.
	other := e.Client()
	ow := e.Worker(other)
	var calls atomic.Int64
	ow.HandleDeadline(`Vendor\Deadline\Escalate`, func(_ context.Context, s queuety.State) error {
		assert.Equal(t, int64(7), s["customer"], "handler state")
		calls.Add(1)
		return nil
	})
	n, err := deadline.New(other).Deadlines(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "expired by the process with the handler")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
	e.Drain(ow)
	assert.Equal(t, int64(1), calls.Load(), "deadline handler calls")
	assert.Equal(t, 0, e.sweep(), "swept again")
}

func testHandoffEnds(t *testing.T, e *Env) {
	id := e.Start(phpHandled("invoice"), nil)
	w := e.Worker(nil)
	w.HandleStep("generate", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Clock.Advance(time.Hour + queuetytype.DefaultDeadlineHandoff - time.Second)
	assert.Equal(t, 0, e.sweep(), "expired within the handoff")
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(id).Status, "within the handoff")
	e.Clock.Advance(time.Second)
	assert.Equal(t, 1, e.sweep(), "expired when the handoff ends")
	runtime.KeepAlive(w) // the engine holds workers' registrations weakly
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "error")
	cb := e.OneJob(driver.JobFilter{Handler: `Vendor\Deadline\Escalate`})
	assert.Equal(t, queuetytype.JobPending, cb.Status, "the handler, enqueued for whoever registers it")
	assert.Len(t, e.failures(id, 0), 1, "timeout failure")

	// A client that hands nothing off expires at once.
	at := e.Start(phpHandled("invoice"), nil)
	now := e.Client(queuety.WithDeadlineHandoff(-1))
	nw := e.Worker(now) // a worker, so the process knows its handlers
	e.Clock.Advance(time.Hour)
	n, err := deadline.New(now).Deadlines(e.Ctx)
	runtime.KeepAlive(nw) // the engine holds workers' registrations weakly
	require.NoError(t, err)
	assert.Equal(t, 1, n, "expired with no handoff")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(at).Status, "status with no handoff")
}

func testHandoffOnlyRunning(t *testing.T, e *Env) {
	// Queuety PHP sweeps only running workflows, so a paused one is
	// expired here at once, and so is a sweep of many left alone.
	paused := e.Start(phpHandled("invoice"), nil)
	require.NoError(t, e.C.PauseWorkflow(e.Ctx, paused))
	var left []int64
	for range 5 {
		left = append(left, e.Start(phpHandled("invoice"), nil))
	}
	w := e.Worker(nil)
	e.Clock.Advance(time.Hour + time.Minute)
	s := deadline.New(e.C)
	n, err := s.Deadlines(e.Ctx)
	runtime.KeepAlive(w)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "expired: the paused workflow only")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(paused).Status, "paused workflow")
	for _, id := range left {
		assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(id).Status, "running workflow %d", id)
	}
}

// expireLikePHP does what Queuety PHP's check_deadlines does to a workflow
// whose deadline handler class does not exist in PHP: fail it with
// "Deadline exceeded", bury its open jobs and log the expiry, without
// calling the handler.
func expireLikePHP(t *testing.T, e *Env, id int64) {
	t.Helper()
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		now := e.Clock.Now().Truncate(time.Second)
		wf, err := tx.WorkflowGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		jobs, err := tx.JobListByWorkflow(e.Ctx, id, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			j.Status, j.FailedAt, j.ErrorMessage = driver.JobBuried, now, "Deadline exceeded"
			if err := tx.JobUpdate(e.Ctx, j); err != nil {
				return err
			}
		}
		wf.Status, wf.FailedAt, wf.ErrorMessage = driver.WorkflowFailed, now, "Deadline exceeded"
		if err := tx.WorkflowUpdate(e.Ctx, wf); err != nil {
			return err
		}
		return tx.LogInsert(e.Ctx, []*driver.LogEntry{{WorkflowID: id, Handler: wf.Name, Queue: "default",
			Event: driver.LogWorkflowDeadlineExceeded, CreatedAt: now}})
	}))
}

func testForeignExpiryOnce(t *testing.T, e *Env) {
	const n = 20
	def := queuety.WorkflowDefinition{Name: "report", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "go_escalate"}
	plain := queuety.WorkflowDefinition{Name: "plain", Steps: steps("never"), ExecutionTimeout: time.Minute}
	var ids []int64
	for i := range n {
		ids = append(ids, e.Start(def, queuety.State{"n": i}))
	}
	noHandler := e.Start(plain, nil)
	phpOnly := e.Start(phpHandled("invoice"), nil)
	e.Clock.Advance(2 * time.Hour)
	for _, id := range append(append([]int64{}, ids...), noHandler, phpOnly) {
		expireLikePHP(t, e, id)
	}

	// A process without the Go handler enqueues nothing.
	bare := e.Client()
	bw := e.Worker(bare)
	got, err := deadline.New(bare).Deadlines(e.Ctx)
	runtime.KeepAlive(bw)
	require.NoError(t, err)
	assert.Equal(t, 0, got, "handlers enqueued by a process without them")
	assert.Empty(t, e.Jobs(driver.JobFilter{Handler: "go_escalate"}), "handler jobs")

	// Eight processes with the handler sweep at once: each handler is
	// enqueued once, with a failure row recorded for each workflow.
	clients := e.Clients(8)
	calls := make([]atomic.Int64, n)
	var workers []*worker.Worker
	for _, c := range clients {
		w := e.Worker(c)
		w.HandleDeadline("go_escalate", func(_ context.Context, s queuety.State) error {
			if i, ok := s.Int("n"); ok && i >= 0 && i < n {
				calls[i].Add(1)
			}
			return nil
		})
		workers = append(workers, w)
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, err := deadline.New(c).Deadlines(context.Background())
			assert.NoError(t, err, "sweep")
			total.Add(int64(got))
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(n), total.Load(), "handlers enqueued across sweepers")
	for _, w := range workers {
		e.Drain(w)
	}
	for i := range calls {
		assert.Equalf(t, int64(1), calls[i].Load(), "deadline handler calls for workflow %d", i)
	}
	for _, id := range ids {
		f := e.failures(id, 0)
		if assert.Len(t, f, 1, "failures of %d", id) {
			assert.Equal(t, queuetytype.TimeoutExecution, f[0].TimeoutKind, "failure kind")
		}
	}
	assert.Len(t, e.failures(noHandler, 0), 1, "the expiry of a workflow without a handler is recorded")
	assert.Empty(t, e.failures(phpOnly, 0), "a workflow whose handler PHP ran is left alone")
	got, err = deadline.New(clients[0]).Deadlines(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, got, "swept again")
}
