package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Compensation/SagaUndoesInReverseOnceUnderConcurrentWorkers", testSaga)
	register("Compensation/CancelRunsThemThenTheCancelCallback", testCompensateOnCancel)
	register("Compensation/DeadlineExpiry", testCompensateOnDeadline)
	register("Compensation/FailedCompensationLoggedAndNextRuns", testCompensationFails)
	register("Compensation/WorkerKilledMidCompensation", testCompensationStale)
	register("Compensation/WithoutCompensateOnFailureNothingRuns", testNoCompensationOnFailure)
	register("Compensation/EndedElsewhereSweepRunsGoOnesOnce", testCompensationEndedElsewhere)
}

// saga is a 4-step workflow: reserve (undo: release), charge (undo:
// refund), ship (fails for good), notify.
func saga(onFailure bool) *builder.Builder {
	b := builder.Workflow("order_saga").
		Then("reserve").CompensateWith("release").
		Then("charge").CompensateWith("refund").
		Then("ship", builder.Retry(1)).
		Then("notify")
	if onFailure {
		b = b.CompensateOnFailure()
	}
	return b
}

// sagaLog records compensation calls in order, with the state each got.
type sagaLog struct {
	mu     sync.Mutex
	calls  []string
	states map[string]queuety.State
}

func (l *sagaLog) handler(name string) queuety.CallbackFunc {
	return func(_ context.Context, s queuety.State) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, name)
		if l.states == nil {
			l.states = map[string]queuety.State{}
		}
		l.states[name] = s
		return nil
	}
}

func (l *sagaLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// sagaWorker registers the saga's steps; ship fails unless shipOK.
func (e *Env) sagaWorker(c *queuety.Client, log *sagaLog, shipOK bool) *worker.Worker {
	w := e.Worker(c)
	w.HandleStep("reserve", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"reservation": "R1"}, nil
	})
	w.HandleStep("charge", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"charge": "C1"}, nil
	})
	w.HandleStep("ship", func(context.Context, queuety.State) (queuety.State, error) {
		if !shipOK {
			return nil, errors.New("carrier down")
		}
		return queuety.State{"shipped": true}, nil
	})
	w.HandleStep("notify", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleCompensation("release", log.handler("release"))
	w.HandleCompensation("refund", log.handler("refund"))
	return w
}

// compensated checks Queuety's end state of a compensated workflow.
func (e *Env) compensated(id int64, cause string) {
	e.T.Helper()
	raw := e.rawState(id)
	v, _ := raw.Get("_compensated")
	assert.Equal(e.T, true, v, "_compensated")
	v, _ = raw.Get("_compensation_cause")
	assert.Equal(e.T, cause, v, "_compensation_cause")
	_, running := raw.Get("_compensation_next")
	assert.False(e.T, running, "_compensation_next left in the state")
}

func testSaga(t *testing.T, e *Env) {
	id := e.startB(saga(true), queuety.State{"order": 7})
	log := &sagaLog{}
	clients := e.Clients(4)
	var wg sync.WaitGroup
	for _, c := range clients {
		w := e.sagaWorker(c, log, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 { // until the saga is done; each pass drains what is due
				if _, err := w.RunOnce(e.Ctx, time.Minute); err != nil {
					t.Errorf("RunOnce: %v", err)
					return
				}
				if len(log.got()) == 2 {
					return
				}
			}
		}()
	}
	wg.Wait()
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "carrier down", wf.ErrorMessage, "error")
	assert.Equal(t, []string{"refund", "release"}, log.got(), "compensations: newest first, once each")
	assert.Equal(t, queuety.State{"order": int64(7), "reservation": "R1", "charge": "C1"}, log.states["refund"], "refund gets the state right after charge")
	assert.Equal(t, queuety.State{"order": int64(7), "reservation": "R1"}, log.states["release"], "release gets the state right after reserve")
	e.compensated(id, engine.CompensateFailure)
	raw := e.rawState(id)
	v, _ := raw.Get("_compensation_stack")
	stack, _ := v.([]any)
	require.Len(t, stack, 2, "_compensation_stack")
	first, _ := stack[0].(*phpjson.Object)
	assert.Equal(t, `{"step_index":0,"handler":"release","payload":[],"state":{"order":7,"reservation":"R1"}}`,
		string(mustMarshal(t, first)), "stack entry, in Queuety's shape")
	require.ErrorIs(t, e.C.RetryWorkflow(e.Ctx, id), queuetytype.ErrInvalidState, "retry after compensation")
}

func testCompensateOnCancel(t *testing.T, e *Env) {
	b := builder.Workflow("cancelled_saga").
		Then("reserve").CompensateWith("release").
		Then("charge").CompensateWith("refund").
		WaitForSignal("go").
		OnCancel("cleanup")
	id := e.startB(b, nil)
	log := &sagaLog{}
	w := e.sagaWorker(nil, log, true)
	var cleanups atomic.Int64
	var atCleanup []string
	w.HandleDeadline("cleanup", func(context.Context, queuety.State) error {
		cleanups.Add(1)
		atCleanup = log.got()
		return nil
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "status before cancel")
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, id))
	// One compensation job at a time, then the cancel callback.
	assert.Len(t, e.Jobs(driver.JobFilter{Status: queuetytype.JobPending, Handler: "cleanup"}), 0, "cancel callback enqueued before the compensations ran")
	e.Drain(w)
	assert.Equal(t, []string{"refund", "release"}, log.got(), "compensations on cancel, without CompensateOnFailure")
	assert.Equal(t, int64(1), cleanups.Load(), "cancel callback runs once")
	assert.Equal(t, []string{"refund", "release"}, atCleanup, "the cancel callback ran after the compensations")
	assert.Equal(t, queuetytype.WorkflowCancelled, e.Workflow(id).Status, "status")
	e.compensated(id, engine.CompensateCancel)
}

func testCompensateOnDeadline(t *testing.T, e *Env) {
	b := builder.Workflow("late_saga").
		Then("reserve").CompensateWith("release").
		WaitForSignal("go").
		ExecutionTimeout(time.Minute).
		CompensateOnFailure()
	id := e.startB(b, nil)
	log := &sagaLog{}
	w := e.sagaWorker(nil, log, true)
	e.Drain(w)
	e.Clock.Advance(2 * time.Minute)
	expired, err := e.eng.ExpireWorkflow(e.Ctx, id)
	require.NoError(t, err)
	require.True(t, expired, "expired")
	e.Drain(w)
	assert.Equal(t, []string{"release"}, log.got(), "compensation after the deadline")
	assert.Equal(t, queuetytype.ErrDeadlineExceeded.Error(), e.Workflow(id).ErrorMessage, "error")
	e.compensated(id, engine.CompensateDeadline)
}

func testCompensationFails(t *testing.T, e *Env) {
	id := e.startB(saga(true).MaxAttempts(2), nil)
	log := &sagaLog{}
	// refund always fails: its attempts (the workflow's 2) run out, the
	// failure is logged, and release still runs.
	var refunds atomic.Int64
	w := e.sagaFailingRefund(&refunds, log)
	e.Drain(w)
	for range 3 {
		e.Clock.Advance(10 * time.Minute) // past the retry backoff
		e.Drain(w)
	}
	assert.Equal(t, int64(2), refunds.Load(), "refund attempts")
	assert.Equal(t, []string{"release"}, log.got(), "release ran after refund gave up")
	e.compensated(id, engine.CompensateFailure)
	logs := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug})
	found := false
	for _, l := range logs {
		if l.Handler == "refund" && l.ErrorMessage == "refund declined" {
			found = true
		}
	}
	assert.True(t, found, "compensation_failed debug log for refund: %v", logs)
}

// sagaFailingRefund is a saga worker whose refund compensation fails.
func (e *Env) sagaFailingRefund(refunds *atomic.Int64, log *sagaLog) *worker.Worker {
	w := e.Worker(nil)
	w.HandleStep("reserve", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"reservation": "R1"}, nil
	})
	w.HandleStep("charge", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"charge": "C1"}, nil })
	w.HandleStep("ship", func(context.Context, queuety.State) (queuety.State, error) { return nil, errors.New("carrier down") })
	w.HandleStep("notify", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleCompensation("release", log.handler("release"))
	w.HandleCompensation("refund", func(context.Context, queuety.State) error {
		refunds.Add(1)
		return errors.New("refund declined")
	})
	return w
}

func testCompensationStale(t *testing.T, e *Env) {
	id := e.startB(saga(true), nil)
	log := &sagaLog{}
	w := e.sagaWorker(nil, log, false)
	// Run the saga's steps only (no compensation handlers on this worker).
	steps := e.Worker(nil)
	steps.HandleStep("reserve", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"reservation": "R1"}, nil
	})
	steps.HandleStep("charge", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"charge": "C1"}, nil })
	steps.HandleStep("ship", func(context.Context, queuety.State) (queuety.State, error) { return nil, errors.New("carrier down") })
	e.Drain(steps)
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
	// A worker claims the refund and dies: nothing reports.
	dead := e.ClaimOne("refund")
	assert.Empty(t, log.got(), "nothing ran yet")
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.recoverStale(), "stale recovery took the refund back")
	e.Drain(w)
	assert.Equal(t, []string{"refund", "release"}, log.got(), "each compensation completed once after the crash")
	assert.ErrorIs(t, e.Complete(dead...)[0], queuetytype.ErrStaleAttempt, "the dead attempt's late result is fenced off")
	e.compensated(id, engine.CompensateFailure)
	assert.Len(t, e.Jobs(driver.JobFilter{Handler: "refund"}), 1, "one refund job")
}

func testNoCompensationOnFailure(t *testing.T, e *Env) {
	id := e.startB(saga(false), nil)
	log := &sagaLog{}
	e.Drain(e.sagaWorker(nil, log, false))
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
	assert.Empty(t, log.got(), "compensations without CompensateOnFailure")
	_, ok := e.rawState(id).Get("_compensated")
	assert.False(t, ok, "_compensated set")
	require.NoError(t, e.C.RetryWorkflow(e.Ctx, id), "an uncompensated failed workflow can be retried")
}

// endElsewhere writes a workflow failed (or cancelled) the way Queuety PHP
// leaves one whose compensations it ran: its other jobs buried, the
// status, and _compensated with the cause, without the Go engine's mark.
func (e *Env) endElsewhere(id int64, status driver.WorkflowStatus, cause string) {
	e.T.Helper()
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		jobs, err := tx.JobListByWorkflow(e.Ctx, id, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			j.Status, j.ErrorMessage, j.FailedAt = driver.JobBuried, "carrier down", e.Clock.Now()
			if err := tx.JobUpdate(e.Ctx, j); err != nil {
				return err
			}
		}
		state, err := phpjson.DecodeObject(wf.State)
		if err != nil {
			return err
		}
		state.Set("_compensated", true)
		state.Set("_compensation_cause", cause)
		wf.State, _ = phpjson.Marshal(state)
		wf.Status = status
		if status == driver.WorkflowFailed {
			wf.FailedAt, wf.ErrorMessage = e.Clock.Now(), "carrier down"
		} else {
			wf.CompletedAt = e.Clock.Now()
		}
		return tx.WorkflowUpdate(e.Ctx, wf)
	}))
}

// testCompensationEndedElsewhere: another engine (Queuety PHP) failed a
// saga and skipped its Go compensations. Four clients' sweeps at once hand
// it to PHP's bridge once (one bridge job, one mark). The bridge's start of
// the chain is played here (what QueuetyGo\WorkflowCallback writes: the
// newest Go name's job with the rest in its marker); Go workers run the
// rest newest first, once each, and the state keeps Queuety's end keys. A
// saga the Go engine failed itself is left alone by the sweep.
func testCompensationEndedElsewhere(t *testing.T, e *Env) {
	log := &sagaLog{}
	id := e.startB(saga(true), queuety.State{"order": 7})
	steps := e.Worker(nil)
	steps.HandleStep("reserve", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"reservation": "R1"}, nil
	})
	steps.HandleStep("charge", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"charge": "C1"}, nil
	})
	e.Drain(steps) // ship is left for the other engine
	e.endElsewhere(id, driver.WorkflowFailed, engine.CompensateFailure)

	var wg sync.WaitGroup
	var taken atomic.Int64
	var workers []*worker.Worker
	for range 4 {
		c := e.Client(queuety.WithPHPCallbacks("php"))
		workers = append(workers, e.sagaWorker(c, log, false))
		sw := deadline.New(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := sw.WorkflowCallbacks(e.Ctx)
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			taken.Add(int64(n))
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), taken.Load(), "workflows the sweeps took")
	bridge := e.Jobs(driver.JobFilter{Queue: "php"})
	require.Len(t, bridge, 1, "bridge jobs")
	assert.Equal(t, engine.HandlerPHPWorkflowCallback, bridge[0].Handler, "bridge job handler")
	assert.Contains(t, string(bridge[0].Payload), `"kind":"ended","workflow_id":`, "bridge job payload")
	n, err := deadline.New(e.Client(queuety.WithPHPCallbacks("php"))).WorkflowCallbacks(e.Ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a later sweep")

	// The bridge: both names are Go handlers here, refund (index 1) first.
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		state, err := phpjson.DecodeObject(wf.State)
		if err != nil {
			return err
		}
		state.Set("_compensation_next", int64(1))
		wf.State, _ = phpjson.Marshal(state)
		if err := tx.WorkflowUpdate(e.Ctx, wf); err != nil {
			return err
		}
		bridge[0].Status = driver.JobCompleted
		if err := tx.JobUpdate(e.Ctx, bridge[0]); err != nil {
			return err
		}
		payload := `{"order":7,"reservation":"R1","charge":"C1","__queuety_callback":{"kind":"compensation","workflow_id":` +
			strconv.FormatInt(id, 10) + `,"index":1,"reason":"failure","plan":[0],"then_cancel":false}}`
		return tx.JobInsert(e.Ctx, []*driver.Job{{Queue: "default", Handler: "refund", Payload: []byte(payload), Status: driver.JobPending,
			MaxAttempts: 3, AvailableAt: e.Clock.Now(), CreatedAt: e.Clock.Now(), CostUnits: 1}})
	}))
	for range 3 {
		e.Drain(workers[0])
	}
	assert.Equal(t, []string{"refund", "release"}, log.got(), "compensations: newest first, once each")
	assert.Equal(t, queuety.State{"order": int64(7), "reservation": "R1"}, log.states["release"], "release gets the state right after reserve")
	e.compensated(id, engine.CompensateFailure)

	// Failed by the Go engine: compensated once, in the chain it started,
	// and never handed on by the sweep.
	goID := e.startB(saga(true), queuety.State{"order": 8})
	for range 3 {
		e.Drain(workers[1])
	}
	n, err = deadline.New(e.Client(queuety.WithPHPCallbacks("php"))).WorkflowCallbacks(e.Ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "sweep after a Go-failed saga")
	assert.Len(t, e.Jobs(driver.JobFilter{Queue: "php"}), 1, "bridge jobs")
	assert.Equal(t, []string{"refund", "release", "refund", "release"}, log.got(), "the Go-failed saga compensated once")
	e.compensated(goID, engine.CompensateFailure)
}
