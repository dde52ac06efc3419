package storetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Workflows/StepsRunInOrderAndStateFlows", testStepsInOrder)
	register("Workflows/MergeDropsPrivateKeys", testMergePrivate)
	register("Workflows/NextStepJumps", testNextStep)
	register("Workflows/NextStepUnknownFailsWorkflow", testNextStepUnknown)
	register("Workflows/Parallel", testParallel)
	register("Workflows/SleepStep", testSleepStep)
	register("Workflows/StepFailureFailsWorkflow", testStepFailure)
	register("Workflows/RetryWorkflow", testRetryWorkflow)
	register("Workflows/PauseResume", testPauseResume)
	register("Workflows/ResumeNeverEnqueuesTwice", testResumeOnce)
	register("Workflows/Cancel", testCancel)
	register("Workflows/SignalSettlesWait", testSignal)
	register("Workflows/SignalBeforeWaitCounts", testSignalEarly)
	register("Workflows/IdempotencyKey", testIdempotency)
	register("Workflows/DispatchValidation", testWorkflowValidation)
	register("Workflows/Describe", testDescribe)
}

// steps is a shorthand for single steps.
func steps(handlers ...string) []queuety.WorkflowStep {
	out := make([]queuety.WorkflowStep, len(handlers))
	for i, h := range handlers {
		out[i] = queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: h}
	}
	return out
}

// Start dispatches a workflow.
func (e *Env) Start(def queuety.WorkflowDefinition, state any) int64 {
	e.T.Helper()
	id, err := e.C.DispatchWorkflow(e.Ctx, def, state)
	require.NoError(e.T, err, "dispatch workflow")
	return id
}

// State returns a workflow's public state.
func (e *Env) State(id int64) queuety.State {
	e.T.Helper()
	s, err := e.C.State(e.Ctx, id)
	require.NoError(e.T, err)
	return s
}

// rawState decodes a workflow's stored state with its private keys.
func (e *Env) rawState(id int64) *phpjson.Object {
	e.T.Helper()
	o, err := phpjson.DecodeObject(e.Workflow(id).State)
	require.NoError(e.T, err)
	return o
}

func counter(n *atomic.Int64, out queuety.State) queuety.StepFunc {
	return func(context.Context, queuety.State) (queuety.State, error) {
		n.Add(1)
		return out, nil
	}
}

func testStepsInOrder(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "order_fulfilment", Steps: steps("fetch", "reserve", "notify")},
		queuety.State{"order_id": 42})
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status")
	assert.Equal(t, 3, wf.TotalSteps, "total_steps")
	first := e.OneJob(driver.JobFilter{WorkflowID: id})
	assert.Equal(t, "fetch", first.Handler, "handler of the job at dispatch")
	if assert.NotNil(t, first.StepIndex, "step_index of the job at dispatch") {
		assert.Equal(t, 0, *first.StepIndex, "step_index of the job at dispatch")
	}
	assert.Equal(t, `{"__queuety_runtime":{"max_attempts":3}}`, string(first.Payload), "first step payload")
	assert.Equal(t, "workflow_started", strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ","), "dispatch log")

	var order []string
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleStep("fetch", func(_ context.Context, s queuety.State) (queuety.State, error) {
		order = append(order, "fetch")
		n, _ := s.Int("order_id")
		return queuety.State{"order": map[string]any{"id": n, "total": 19.5}, "status": "fetched"}, nil
	})
	w.HandleStep("reserve", func(_ context.Context, s queuety.State) (queuety.State, error) {
		order = append(order, "reserve")
		if s.String("status") != "fetched" {
			return nil, errors.New("state did not flow")
		}
		return queuety.State{"status": "reserved"}, nil
	})
	w.HandleStep("notify", func(_ context.Context, s queuety.State) (queuety.State, error) {
		order = append(order, "notify")
		return queuety.State{"notified": true}, nil
	})
	e.Drain(w)
	assert.Equal(t, "fetch,reserve,notify", strings.Join(order, ","), "order")
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status")
	assert.Equal(t, 3, wf.CurrentStep, "current_step")
	st := e.State(id)
	assert.Equal(t, "reserved", st.String("status"), "status key overwritten in place")
	assert.Equal(t, true, st.Bool("notified"), "notified")
	// Keys keep Queuety's order: initial keys, then private keys, then step output.
	raw := e.rawState(id)
	assert.Equal(t, "order_id,_steps,_queue,_priority,_max_attempts,_definition_hash,order,status,notified", strings.Join(raw.Keys(), ","), "key order")
	logs := strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ",")
	assert.Equal(t, "workflow_started,started,completed,started,completed,started,completed,workflow_completed", logs, "logs")
	events := e.events(id)
	require.Len(t, events, 6, "events")
	ev := events[3]
	assert.Equal(t, driver.EventStepCompleted, ev.Event, "event")
	assert.Equal(t, 1, ev.StepIndex, "event step")
	assert.Equal(t, `{"status":"reserved"}`, string(ev.Output), "output")
	assert.Equal(t, `{"order_id":42,"order":{"id":42,"total":19.5},"status":"fetched"}`, string(ev.StateBefore), "state_before")
	assert.Equal(t, `{"order_id":42,"order":{"id":42,"total":19.5},"status":"reserved"}`, string(ev.StateAfter), "state_after")
}

func testMergePrivate(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a")}, nil)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"kept": 1, "_debug": "dropped", "_queue": "hijack"}, nil
	})
	e.Drain(w)
	raw := e.rawState(id)
	_, ok := raw.Get("_debug")
	assert.False(t, ok, "a private output key reached the state")
	q, _ := raw.Get("_queue")
	assert.Equal(t, any("default"), q, "_queue untouched")
	assert.Equal(t, any(int64(1)), e.State(id)["kept"], "kept")
}

func testNextStep(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "ticket", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "classify", Name: "classify"},
		{Type: queuetytype.StepSingle, Handler: "escalate", Name: "escalate"},
		{Type: queuetytype.StepSingle, Handler: "reply", Name: "auto_reply"},
	}}
	id := e.Start(def, nil)
	var escalated atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("classify", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"category": "faq", "_next_step": "auto_reply"}, nil
	})
	w.HandleStep("escalate", counter(&escalated, nil))
	w.HandleStep("reply", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"replied": true}, nil
	})
	e.Drain(w)
	assert.Equal(t, int64(0), escalated.Load(), "escalate ran")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	_, ok := e.rawState(id).Get("_next_step")
	assert.False(t, ok, "_next_step stored in state")
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id}), 2, "jobs (step 1 skipped)")
}

func testNextStepUnknown(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b")}, nil)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"_next_step": "nowhere"}, nil
	})
	w.HandleStep("b", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, "_next_step target 'nowhere' not found", "error")
}

func testParallel(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "enrich", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepParallel, Handlers: []string{"avatar", "company"}},
		{Type: queuetytype.StepSingle, Handler: "merge"},
	}}
	id := e.Start(def, queuety.State{"user_id": 7})
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id}), 2, "branch jobs at dispatch")
	// Run the first branch alone.
	first := e.ClaimOne("avatar")
	err := e.eng.Finish(e.Ctx, &engine.Result{Claimed: first[0], Output: queuety.State{"avatar_url": "u.png"}})
	require.NoError(t, err)
	wf := e.Workflow(id)
	assert.Equal(t, 0, wf.CurrentStep, "current_step after one branch")
	assert.Equal(t, "u.png", e.State(id).String("avatar_url"), "first branch merged at once")
	var merged atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("company", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"company": "Acme GmbH"}, nil
	})
	w.HandleStep("merge", func(_ context.Context, s queuety.State) (queuety.State, error) {
		merged.Add(1)
		if s.String("avatar_url") == "" || s.String("company") == "" {
			return nil, errors.New("branch outputs missing")
		}
		return queuety.State{"profile_complete": true}, nil
	})
	e.Drain(w)
	assert.Equal(t, int64(1), merged.Load(), "merge ran")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	var kinds []string
	for _, ev := range e.events(id) {
		if ev.StepIndex == 0 && ev.Event != driver.EventStepStarted {
			kinds = append(kinds, string(ev.Event))
		}
	}
	assert.Equal(t, "step_branch_completed,step_branch_completed,step_completed", strings.Join(kinds, ","), "step 0 events")
}

func testSleepStep(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "drip", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "welcome"},
		{Type: queuetytype.StepDelay, Delay: 30 * time.Second},
		{Type: queuetytype.StepSingle, Handler: "followup"},
	}}
	id := e.Start(def, nil)
	var followups atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("welcome", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"welcome_sent": true}, nil
	})
	w.HandleStep("followup", counter(&followups, queuety.State{"followup_sent": true}))
	e.Drain(w)
	delay := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerDelay})
	assert.Equal(t, Epoch.Add(30*time.Second), delay.AvailableAt, "delay job due")
	assert.Equal(t, `{"step_index":1,"__queuety_runtime":{"max_attempts":3}}`, string(delay.Payload), "delay job payload")
	assert.Equal(t, 0, delay.CostUnits, "delay job cost")
	assert.Equal(t, int64(0), followups.Load(), "follow-up before the timer")
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(id).Status, "status while sleeping")
	e.Clock.Advance(30 * time.Second)
	e.Drain(w)
	assert.Equal(t, int64(1), followups.Load(), "follow-up after the timer")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
}

func testStepFailure(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "crm_sync", MaxAttempts: 2, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepParallel, Handlers: []string{"export", "push"}},
		{Type: queuetytype.StepSingle, Handler: "after"},
	}}
	id := e.Start(def, nil)
	w := e.Worker(nil)
	w.HandleStep("push", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, errors.New("CRM API timed out after 30s")
	})
	w.HandleStep("export", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return nil, errors.New("export failing too")
	})
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, []string{"CRM API timed out after 30s", "export failing too"}, wf.ErrorMessage, "error")
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	assert.Len(t, jobs, 2, "jobs (the two branches; the next step never enqueued)")
	for _, j := range jobs {
		assert.Equalf(t, queuetytype.JobBuried, j.Status, "job %d (%s) after the workflow failed", j.ID, j.Handler)
	}
	failed := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowFailed})
	require.Len(t, failed, 1, "workflow_failed logs")
	if assert.NotNil(t, failed[0].JobID, "workflow_failed job_id") {
		assert.NotZero(t, *failed[0].JobID, "workflow_failed job_id")
	}
	assert.Empty(t, failed[0].Handler, "workflow_failed handler")
	stepFailed := 0
	for _, ev := range e.events(id) {
		if ev.Event == driver.EventStepFailed {
			stepFailed++
			assert.Contains(t, string(ev.Error), `"message"`, "step_failed error")
			assert.Equal(t, string(ev.StateBefore), string(ev.StateAfter), "step_failed state_after")
		}
	}
	assert.GreaterOrEqual(t, stepFailed, 2, "step_failed events")
}

func testRetryWorkflow(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "crm", MaxAttempts: 1, Steps: steps("a", "b")}, nil)
	var down atomic.Bool
	down.Store(true)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleStep("b", func(context.Context, queuety.State) (queuety.State, error) {
		if down.Load() {
			return nil, errors.New("down")
		}
		return queuety.State{"b": 1}, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, 1, wf.CurrentStep, "current step")
	require.ErrorIs(t, e.C.RetryWorkflow(e.Ctx, 999999), queuetytype.ErrNotFound, "retry missing")
	require.NoError(t, e.C.RetryWorkflow(e.Ctx, id))
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status after retry")
	assert.Equal(t, "", wf.ErrorMessage, "error cleared")
	assert.Equal(t, 2, wf.RunNumber, "run number")
	require.ErrorIs(t, e.C.RetryWorkflow(e.Ctx, id), queuetytype.ErrInvalidState, "retry running")
	down.Store(false)
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	st := e.State(id)
	assert.Equal(t, any(int64(1)), st["a"], "a kept")
}

func testPauseResume(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "import", Steps: steps("download", "import")}, nil)
	require.NoError(t, e.C.PauseWorkflow(e.Ctx, id))
	var imported atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("download", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"rows": 1200}, nil })
	w.HandleStep("import", counter(&imported, nil))
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowPaused, wf.Status, "status")
	assert.Equal(t, 1, wf.CurrentStep, "in-flight step advanced")
	assert.Equal(t, int64(0), imported.Load(), "next step ran while paused")
	require.ErrorIs(t, e.C.PauseWorkflow(e.Ctx, id), queuetytype.ErrInvalidState, "pause paused")
	require.NoError(t, e.C.ResumeWorkflow(e.Ctx, id))
	e.Drain(w)
	assert.Equal(t, int64(1), imported.Load(), "import ran once")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	got := strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ",")
	assert.Contains(t, got, "workflow_paused", "logs")
	assert.Contains(t, got, "workflow_resumed", "logs")
}

func testResumeOnce(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b")}, nil)
	jobs := e.ClaimOne("a") // step 0 is running
	require.NoError(t, e.C.PauseWorkflow(e.Ctx, id))
	require.NoError(t, e.C.ResumeWorkflow(e.Ctx, id))
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id}), 1, "jobs after resume while step 0 runs")
	require.NoError(t, e.eng.Finish(e.Ctx, &engine.Result{Claimed: jobs[0]}))
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id}), 2, "jobs after step 0 finished")
}

func testCancel(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b"), OnCancel: "cleanup"}
	id := e.Start(def, queuety.State{"temp_file": "/tmp/x"})
	var got []queuety.State
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleDeadline("cleanup", func(_ context.Context, s queuety.State) error { got = append(got, s); return nil })
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, id))
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowCancelled, wf.Status, "status")
	stepJob := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "a"})
	assert.Equal(t, queuetytype.JobBuried, stepJob.Status, "step job buried")
	assert.Equal(t, "Workflow cancelled", stepJob.ErrorMessage, "step job error")
	e.Drain(w)
	require.Len(t, got, 1, "cancel callback calls")
	assert.Equal(t, queuety.State{"temp_file": "/tmp/x"}, got[0], "state the cancel callback got")
	require.ErrorIs(t, e.C.CancelWorkflow(e.Ctx, id), queuetytype.ErrInvalidState, "cancel cancelled")
}

func testSignal(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "expense", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "submit"},
		{Type: queuetytype.StepWaitForSignal, Signal: "approval"},
		{Type: queuetytype.StepSingle, Handler: "record"},
	}}
	id := e.Start(def, queuety.State{"expense_id": "EXP-77"})
	var recorded atomic.Value
	w := e.Worker(nil)
	w.HandleStep("submit", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"submitted": true}, nil
	})
	w.HandleStep("record", func(_ context.Context, s queuety.State) (queuety.State, error) {
		recorded.Store(s.String("approved_by"))
		return queuety.State{"recorded": true}, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, wf.Status, "status")
	assert.Equal(t, 1, wf.CurrentStep, "current step")
	_, ok := e.rawState(id).Get("_wait")
	assert.True(t, ok, "no _wait in state")
	require.NoError(t, e.C.Signal(e.Ctx, id, "other", nil))
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(id).Status, "status after an unrelated signal")
	require.NoError(t, e.C.Signal(e.Ctx, id, "approval", queuety.State{"approved_by": "manager@example.com"}))
	wf = e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status after signal")
	assert.Equal(t, 2, wf.CurrentStep, "current step")
	_, ok = e.rawState(id).Get("_wait")
	assert.False(t, ok, "_wait left in state")
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, any("manager@example.com"), recorded.Load(), "next step saw the payload")
	require.NoError(t, e.C.Signal(e.Ctx, id, "approval", nil), "late signal")
	ignored := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug})
	require.Len(t, ignored, 1, "late signal not recorded as ignored")
	assert.Contains(t, string(ignored[0].Context), "signal_ignored", "late signal not recorded as ignored")
	require.ErrorIs(t, e.C.Signal(e.Ctx, 999999, "approval", nil), queuetytype.ErrNotFound, "signal to a missing workflow")
}

func testSignalEarly(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "a"},
		{Type: queuetytype.StepWaitForSignal, Signal: "go", ResultKey: "go_payload"},
	}}
	id := e.Start(def, nil)
	require.NoError(t, e.C.Signal(e.Ctx, id, "go", queuety.State{"n": 1}))
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	p, _ := e.State(id)["go_payload"].(map[string]any)
	assert.Equal(t, any(int64(1)), p["n"], "result key holds the payload")
}

func testIdempotency(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: steps("build"), IdempotencyKey: "report:2026-11-21"}
	a := e.Start(def, queuety.State{"date": "2026-11-21"})
	b := e.Start(def, queuety.State{"date": "2026-11-21", "rerun": true})
	assert.Equal(t, a, b, "second dispatch returns the first id")
	assert.Len(t, e.Workflows(driver.WorkflowFilter{}), 1, "workflows")
	assert.Len(t, e.Jobs(driver.JobFilter{}), 1, "jobs")
	assert.NotContains(t, e.State(a), "rerun", "the second dispatch's state was written")
	// Concurrent dispatches with one key: one workflow.
	def.IdempotencyKey = "race"
	ids := make(chan int64, 8)
	for range 8 {
		go func() {
			id, err := e.C.DispatchWorkflow(context.Background(), def, nil)
			assert.NoError(t, err, "dispatch")
			ids <- id
		}()
	}
	got := make([]int64, 0, 8)
	for range 8 {
		got = append(got, <-ids)
	}
	for _, id := range got {
		assert.NotZero(t, id, "workflow id of a concurrent dispatch")
		assert.Equal(t, got[0], id, "concurrent dispatches must return one workflow id")
	}
	assert.Len(t, e.Workflows(driver.WorkflowFilter{Name: "nightly"}), 2, "workflows with the key")
}

func testWorkflowValidation(t *testing.T, e *Env) {
	long := make([]queuety.WorkflowStep, 256)
	for i := range long {
		long[i] = queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: "h"}
	}
	cases := []struct {
		name string
		def  queuety.WorkflowDefinition
		want error
	}{
		{"no steps", queuety.WorkflowDefinition{Name: "wf"}, queuetytype.ErrInvalidArgument},
		{"no name", queuety.WorkflowDefinition{Steps: steps("a")}, queuetytype.ErrInvalidArgument},
		{"empty handler", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "")}, queuetytype.ErrInvalidArgument},
		{"duplicate names", queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
			{Type: queuetytype.StepSingle, Handler: "a", Name: "x"}, {Type: queuetytype.StepSingle, Handler: "b", Name: "x"}}}, queuetytype.ErrInvalidArgument},
		{"256 steps", queuety.WorkflowDefinition{Name: "wf", Steps: long}, queuetytype.ErrInvalidArgument},
		{"bad priority", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), Priority: 9}, queuetytype.ErrInvalidArgument},
		{"sub-second deadline", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), ExecutionTimeout: time.Millisecond}, queuetytype.ErrInvalidTimeout},
		{"negative deadline", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), ExecutionTimeout: -time.Hour}, queuetytype.ErrInvalidTimeout},
		{"negative run timeout", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), RunTimeout: -time.Second}, queuetytype.ErrInvalidTimeout},
		{"negative sleep", queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepDelay, Delay: -time.Second}}}, queuetytype.ErrInvalidArgument},
		{"internal handler", queuety.WorkflowDefinition{Name: "wf", Steps: steps("__queuety_delay")}, queuetytype.ErrInvalidArgument},
	}
	for _, c := range cases {
		_, err := e.C.DispatchWorkflow(e.Ctx, c.def, nil)
		assert.ErrorIs(t, err, c.want, c.name)
	}
	_, err := e.C.DispatchWorkflow(e.Ctx, queuety.WorkflowDefinition{Name: "wf", Steps: steps("a")}, queuety.State{"_x": 1})
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "private initial key")
	assert.Empty(t, e.Workflows(driver.WorkflowFilter{}), "workflows written")
	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs written")
}

func testDescribe(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "describe_me", ExecutionTimeout: time.Hour, RunTimeout: 10 * time.Minute,
		OnDeadline: "alert", Steps: []queuety.WorkflowStep{
			{Type: queuetytype.StepSingle, Handler: "a", Options: queuety.ResolveJobOptions(queuety.StartToClose(90 * time.Second))},
			{Type: queuetytype.StepSingle, Handler: "b", Options: queuety.ResolveJobOptions(queuety.MaxAttempts(2))},
		}}
	id := e.Start(def, queuety.State{"k": "v"})
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleStep("b", func(context.Context, queuety.State) (queuety.State, error) { return nil, errors.New("nope") })
	e.Drain(w)
	d, err := e.C.DescribeWorkflow(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowRunning, d.Status, "status")
	assert.Equal(t, Epoch.Add(time.Hour).Format(time.RFC3339), d.Deadlines.ExecutionDeadline, "execution deadline")
	assert.Equal(t, Epoch.Add(10*time.Minute).Format(time.RFC3339), d.Deadlines.RunDeadline, "run deadline")
	assert.Equal(t, 1, d.Deadlines.Run, "run")
	assert.Equal(t, int64(3600), d.Deadlines.ExecutionTimeoutSeconds, "execution timeout")
	assert.Len(t, d.Steps, 2, "steps")
	assert.Equal(t, "completed", d.Steps[0].Status, "step 0 status")
	assert.Equal(t, "PT1M30S", d.Steps[0].Timeouts.StartToClose, "step 0 start-to-close")
	assert.Equal(t, "pending", d.Steps[1].Status, "step 1 status")
	h := d.Steps[1].Jobs[0].History
	require.Len(t, h, 1, "step 1 history")
	assert.Equal(t, "retried", h[0].Outcome, "step 1 outcome")
	assert.Equal(t, "nope", h[0].Error, "step 1 error")
	assert.Equal(t, "alert", d.OnDeadline, "on_deadline")
	require.GreaterOrEqual(t, len(d.Timeline), 5, "timeline entries")
	assert.Equal(t, "workflow_started", d.Timeline[0].Event, "first timeline entry")
	_, err = e.C.DescribeWorkflow(e.Ctx, 424242)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "describe missing")
}

func init() {
	register("Workflows/MalformedStateFailsWorkflow", testMalformedState)
	register("Workflows/OrphanStepIsBuried", testOrphanStep)
	register("Workflows/ForEachWrittenByPHPRunsOnGo", testPHPForEachStep)
}

// insertWorkflow writes a workflow row and its first step job directly, as
// another runtime would.
func (e *Env) insertWorkflow(state string, handler string) (int64, int64) {
	e.T.Helper()
	var wfID, jobID int64
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		wf := &driver.Workflow{Name: "php_made", Status: queuetytype.WorkflowRunning, State: []byte(state), TotalSteps: 2, StartedAt: Epoch}
		if err := tx.WorkflowInsert(e.Ctx, wf); err != nil {
			return err
		}
		step := 0
		j := &driver.Job{Queue: "default", Handler: handler, Payload: []byte(`{"__queuety_runtime":{"max_attempts":3}}`),
			Status: queuetytype.JobPending, MaxAttempts: 3, AvailableAt: Epoch, WorkflowID: wf.ID, StepIndex: &step, CostUnits: 1, CreatedAt: Epoch}
		if err := tx.JobInsert(e.Ctx, []*driver.Job{j}); err != nil {
			return err
		}
		wfID, jobID = wf.ID, j.ID
		return nil
	})
	require.NoError(e.T, err)
	return wfID, jobID
}

func testMalformedState(t *testing.T, e *Env) {
	wfID, jobID := e.insertWorkflow(`{"_steps":[{"type":"single","name":"0","class":"a"}`, "a")
	var called atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("a", counter(&called, nil))
	e.Drain(w)
	assert.Equal(t, int64(0), called.Load(), "handler called with an unreadable state")
	j := e.Job(jobID)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "job")
	assert.Equal(t, 1, j.Attempts, "attempts (the error is final)")
	assert.Contains(t, j.ErrorMessage, "malformed workflow state JSON", "error")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(wfID).Status, "workflow")
}

// testPHPForEachStep: a workflow whose rows Queuety PHP wrote, with a
// for_each step after a plain one, runs to the end on Go workers: the
// placeholder job (as PHP writes it) expands into one branch per item.
func testPHPForEachStep(t *testing.T, e *Env) {
	state := `{"items":[1,2],"_steps":[{"type":"single","name":"0","class":"a"},` +
		`{"type":"for_each","name":"each","items_key":"items","class":"App\\Steps\\Item","result_key":null,"mode":"all","quorum":null,"reducer_class":null,"compensation":null}],` +
		`"_queue":"default","_priority":0,"_max_attempts":3}`
	wfID, _ := e.insertWorkflow(state, "a")
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleForEach(`App\Steps\Item`, func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		n, _ := item.(int64)
		return queuety.State{"double": n * 2}, nil
	})
	e.Drain(w)
	wf := e.Workflow(wfID)
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status")
	placeholder := e.OneJob(driver.JobFilter{WorkflowID: wfID, Handler: "__queuety_for_each"})
	assert.Equal(t, `{"step_index":1,"__queuety_runtime":{"max_attempts":3}}`, string(placeholder.Payload), "placeholder payload, as Queuety writes it")
	assert.Equal(t, 0, placeholder.CostUnits, "placeholder cost")
	agg, ok := e.State(wfID)["each_results"].(map[string]any)
	require.True(t, ok, "aggregate under <name>_results: %v", e.State(wfID))
	assert.Equal(t, int64(2), agg["succeeded"], "branches succeeded")
}

// testOrphanStep: a step job whose workflow row does not exist (deleted by
// hand, or written by a broken tool) is buried on its first claim with an
// error naming the workflow, in the row and in the log, instead of staying
// pending forever; its handler never runs.
func testOrphanStep(t *testing.T, e *Env) {
	var id int64
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		step := 0
		j := &driver.Job{Queue: "default", Handler: "orphan_step", Payload: []byte(`{}`), Status: queuetytype.JobPending,
			MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1, WorkflowID: 987654, StepIndex: &step}
		err := tx.JobInsert(e.Ctx, []*driver.Job{j})
		id = j.ID
		return err
	})
	require.NoError(t, err)
	w := e.Worker(nil)
	called := false
	w.HandleStep("orphan_step", func(context.Context, queuety.State) (queuety.State, error) { called = true; return nil, nil })
	e.Drain(w)
	assert.False(t, called, "handler of an orphan step called")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "buried on its first attempt")
	assert.Contains(t, j.ErrorMessage, "workflow 987654 not found", "error")
	buried := e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried})
	if assert.Len(t, buried, 1, "buried log rows") {
		assert.Equal(t, j.ErrorMessage, buried[0].ErrorMessage, "the log row's error")
	}
}
