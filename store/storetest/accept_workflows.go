package storetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
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
		out[i] = queuety.WorkflowStep{Type: queuety.StepSingle, Handler: h}
	}
	return out
}

// Start dispatches a workflow.
func (e *Env) Start(def queuety.WorkflowDefinition, state any) int64 {
	e.T.Helper()
	id, err := e.C.DispatchWorkflow(e.Ctx, def, state)
	if err != nil {
		e.T.Fatalf("dispatch workflow: %v", err)
	}
	return id
}

// State returns a workflow's public state.
func (e *Env) State(id int64) queuety.State {
	e.T.Helper()
	s, err := e.C.State(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return s
}

// rawState decodes a workflow's stored state with its private keys.
func (e *Env) rawState(id int64) *phpjson.Object {
	e.T.Helper()
	o, err := phpjson.DecodeObject(e.Workflow(id).State)
	if err != nil {
		e.T.Fatal(err)
	}
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
	Equal(t, "status", wf.Status, queuety.WorkflowRunning)
	Equal(t, "total_steps", wf.TotalSteps, 3)
	first := e.OneJob(driver.JobFilter{WorkflowID: id})
	if first.Handler != "fetch" || first.StepIndex == nil || *first.StepIndex != 0 {
		t.Fatalf("job at dispatch = %+v", first)
	}
	Equal(t, "first step payload", string(first.Payload), `{"__queuety_runtime":{"max_attempts":3}}`)
	Equal(t, "dispatch log", strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ","), "workflow_started")

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
	Equal(t, "order", strings.Join(order, ","), "fetch,reserve,notify")
	wf = e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowCompleted)
	Equal(t, "current_step", wf.CurrentStep, 3)
	st := e.State(id)
	Equal(t, "status key overwritten in place", st.String("status"), "reserved")
	Equal(t, "notified", st.Bool("notified"), true)
	// Keys keep Queuety's order: initial keys, then private keys, then step output.
	raw := e.rawState(id)
	Equal(t, "key order", strings.Join(raw.Keys(), ","),
		"order_id,_steps,_queue,_priority,_max_attempts,_definition_hash,order,status,notified")
	logs := strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ",")
	Equal(t, "logs", logs, "workflow_started,started,completed,started,completed,started,completed,workflow_completed")
	events := e.events(id)
	Equal(t, "events", len(events), 6)
	ev := events[3]
	Equal(t, "event", ev.Event, driver.EventStepCompleted)
	Equal(t, "event step", ev.StepIndex, 1)
	Equal(t, "output", string(ev.Output), `{"status":"reserved"}`)
	Equal(t, "state_before", string(ev.StateBefore), `{"order_id":42,"order":{"id":42,"total":19.5},"status":"fetched"}`)
	Equal(t, "state_after", string(ev.StateAfter), `{"order_id":42,"order":{"id":42,"total":19.5},"status":"reserved"}`)
}

func testMergePrivate(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a")}, nil)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"kept": 1, "_debug": "dropped", "_queue": "hijack"}, nil
	})
	e.Drain(w)
	raw := e.rawState(id)
	if _, ok := raw.Get("_debug"); ok {
		t.Fatal("a private output key reached the state")
	}
	q, _ := raw.Get("_queue")
	Equal(t, "_queue untouched", q, any("default"))
	Equal(t, "kept", e.State(id)["kept"], any(int64(1)))
}

func testNextStep(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "ticket", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "classify", Name: "classify"},
		{Type: queuety.StepSingle, Handler: "escalate", Name: "escalate"},
		{Type: queuety.StepSingle, Handler: "reply", Name: "auto_reply"},
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
	Equal(t, "escalate ran", escalated.Load(), int64(0))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	if _, ok := e.rawState(id).Get("_next_step"); ok {
		t.Fatal("_next_step stored in state")
	}
	Equal(t, "jobs (step 1 skipped)", len(e.Jobs(driver.JobFilter{WorkflowID: id})), 2)
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
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Contains(t, "error", wf.ErrorMessage, "_next_step target 'nowhere' not found")
}

func testParallel(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "enrich", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepParallel, Handlers: []string{"avatar", "company"}},
		{Type: queuety.StepSingle, Handler: "merge"},
	}}
	id := e.Start(def, queuety.State{"user_id": 7})
	Equal(t, "branch jobs at dispatch", len(e.Jobs(driver.JobFilter{WorkflowID: id})), 2)
	// Run the first branch alone.
	first := e.ClaimOne("avatar")
	err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: first[0], Output: queuety.State{"avatar_url": "u.png"}})
	if err != nil {
		t.Fatal(err)
	}
	wf := e.Workflow(id)
	Equal(t, "current_step after one branch", wf.CurrentStep, 0)
	Equal(t, "first branch merged at once", e.State(id).String("avatar_url"), "u.png")
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
	Equal(t, "merge ran", merged.Load(), int64(1))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	var kinds []string
	for _, ev := range e.events(id) {
		if ev.StepIndex == 0 && ev.Event != driver.EventStepStarted {
			kinds = append(kinds, string(ev.Event))
		}
	}
	Equal(t, "step 0 events", strings.Join(kinds, ","), "step_branch_completed,step_branch_completed,step_completed")
}

func testSleepStep(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "drip", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "welcome"},
		{Type: queuety.StepDelay, Delay: 30 * time.Second},
		{Type: queuety.StepSingle, Handler: "followup"},
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
	Equal(t, "delay job due", delay.AvailableAt, Epoch.Add(30*time.Second))
	Equal(t, "delay job payload", string(delay.Payload), `{"step_index":1,"__queuety_runtime":{"max_attempts":3}}`)
	Equal(t, "delay job cost", delay.CostUnits, 0)
	Equal(t, "follow-up before the timer", followups.Load(), int64(0))
	Equal(t, "status while sleeping", e.Workflow(id).Status, queuety.WorkflowRunning)
	e.Clock.Advance(30 * time.Second)
	e.Drain(w)
	Equal(t, "follow-up after the timer", followups.Load(), int64(1))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
}

func testStepFailure(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "crm_sync", MaxAttempts: 2, Steps: []queuety.WorkflowStep{
		{Type: queuety.StepParallel, Handlers: []string{"export", "push"}},
		{Type: queuety.StepSingle, Handler: "after"},
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
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	if wf.ErrorMessage != "CRM API timed out after 30s" && wf.ErrorMessage != "export failing too" {
		t.Fatalf("error = %q", wf.ErrorMessage)
	}
	jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
	Equal(t, "jobs (the two branches; the next step never enqueued)", len(jobs), 2)
	for _, j := range jobs {
		if j.Status != queuety.JobBuried {
			t.Fatalf("job %d (%s) is %s after the workflow failed", j.ID, j.Handler, j.Status)
		}
	}
	failed := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowFailed})
	if len(failed) != 1 || failed[0].JobID == nil || *failed[0].JobID == 0 || failed[0].Handler != "" {
		t.Fatalf("workflow_failed logs = %+v", failed)
	}
	stepFailed := 0
	for _, ev := range e.events(id) {
		if ev.Event == driver.EventStepFailed {
			stepFailed++
			if !strings.Contains(string(ev.Error), `"message"`) || string(ev.StateAfter) != string(ev.StateBefore) {
				t.Fatalf("step_failed event = %s / %s", ev.Error, ev.StateAfter)
			}
		}
	}
	if stepFailed < 2 {
		t.Fatalf("step_failed events = %d", stepFailed)
	}
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
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "current step", wf.CurrentStep, 1)
	if err := e.C.RetryWorkflow(e.Ctx, 999999); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("retry missing: %v", err)
	}
	if err := e.C.RetryWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	wf = e.Workflow(id)
	Equal(t, "status after retry", wf.Status, queuety.WorkflowRunning)
	Equal(t, "error cleared", wf.ErrorMessage, "")
	Equal(t, "run number", wf.RunNumber, 2)
	if err := e.C.RetryWorkflow(e.Ctx, id); !errors.Is(err, queuety.ErrInvalidState) {
		t.Fatalf("retry running: %v", err)
	}
	down.Store(false)
	e.Drain(w)
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	st := e.State(id)
	Equal(t, "a kept", st["a"], any(int64(1)))
}

func testPauseResume(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "import", Steps: steps("download", "import")}, nil)
	if err := e.C.PauseWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	var imported atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("download", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"rows": 1200}, nil })
	w.HandleStep("import", counter(&imported, nil))
	e.Drain(w)
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowPaused)
	Equal(t, "in-flight step advanced", wf.CurrentStep, 1)
	Equal(t, "next step ran while paused", imported.Load(), int64(0))
	if err := e.C.PauseWorkflow(e.Ctx, id); !errors.Is(err, queuety.ErrInvalidState) {
		t.Fatalf("pause paused: %v", err)
	}
	if err := e.C.ResumeWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	e.Drain(w)
	Equal(t, "import ran once", imported.Load(), int64(1))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	got := strings.Join(e.Events(driver.LogFilter{WorkflowID: id}), ",")
	Contains(t, "logs", got, "workflow_paused", "workflow_resumed")
}

func testResumeOnce(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b")}, nil)
	jobs := e.ClaimOne("a") // step 0 is running
	if err := e.C.PauseWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.C.ResumeWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	Equal(t, "jobs after resume while step 0 runs", len(e.Jobs(driver.JobFilter{WorkflowID: id})), 1)
	if err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: jobs[0]}); err != nil {
		t.Fatal(err)
	}
	Equal(t, "jobs after step 0 finished", len(e.Jobs(driver.JobFilter{WorkflowID: id})), 2)
}

func testCancel(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b"), OnCancel: "cleanup"}
	id := e.Start(def, queuety.State{"temp_file": "/tmp/x"})
	var got []queuety.State
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleDeadline("cleanup", func(_ context.Context, s queuety.State) error { got = append(got, s); return nil })
	if err := e.C.CancelWorkflow(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowCancelled)
	stepJob := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "a"})
	Equal(t, "step job buried", stepJob.Status, queuety.JobBuried)
	Equal(t, "step job error", stepJob.ErrorMessage, "Workflow cancelled")
	e.Drain(w)
	if len(got) != 1 || got[0].String("temp_file") != "/tmp/x" || len(got[0]) != 1 {
		t.Fatalf("cancel callback calls = %v", got)
	}
	if err := e.C.CancelWorkflow(e.Ctx, id); !errors.Is(err, queuety.ErrInvalidState) {
		t.Fatalf("cancel cancelled: %v", err)
	}
}

func testSignal(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "expense", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "submit"},
		{Type: queuety.StepWaitForSignal, Signal: "approval"},
		{Type: queuety.StepSingle, Handler: "record"},
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
	Equal(t, "status", wf.Status, queuety.WorkflowWaitingForSignal)
	Equal(t, "current step", wf.CurrentStep, 1)
	if _, ok := e.rawState(id).Get("_wait"); !ok {
		t.Fatal("no _wait in state")
	}
	if err := e.C.Signal(e.Ctx, id, "other", nil); err != nil {
		t.Fatal(err)
	}
	Equal(t, "status after an unrelated signal", e.Workflow(id).Status, queuety.WorkflowWaitingForSignal)
	if err := e.C.Signal(e.Ctx, id, "approval", queuety.State{"approved_by": "manager@example.com"}); err != nil {
		t.Fatal(err)
	}
	wf = e.Workflow(id)
	Equal(t, "status after signal", wf.Status, queuety.WorkflowRunning)
	Equal(t, "current step", wf.CurrentStep, 2)
	if _, ok := e.rawState(id).Get("_wait"); ok {
		t.Fatal("_wait left in state")
	}
	e.Drain(w)
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	Equal(t, "next step saw the payload", recorded.Load(), any("manager@example.com"))
	if err := e.C.Signal(e.Ctx, id, "approval", nil); err != nil {
		t.Fatalf("late signal: %v", err)
	}
	ignored := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug})
	if len(ignored) != 1 || !strings.Contains(string(ignored[0].Context), "signal_ignored") {
		t.Fatalf("late signal not recorded as ignored: %+v", ignored)
	}
	if err := e.C.Signal(e.Ctx, 999999, "approval", nil); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("signal to a missing workflow: %v", err)
	}
}

func testSignalEarly(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "a"},
		{Type: queuety.StepWaitForSignal, Signal: "go", ResultKey: "go_payload"},
	}}
	id := e.Start(def, nil)
	if err := e.C.Signal(e.Ctx, id, "go", queuety.State{"n": 1}); err != nil {
		t.Fatal(err)
	}
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	p, _ := e.State(id)["go_payload"].(map[string]any)
	Equal(t, "result key holds the payload", p["n"], any(int64(1)))
}

func testIdempotency(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: steps("build"), IdempotencyKey: "report:2026-11-21"}
	a := e.Start(def, queuety.State{"date": "2026-11-21"})
	b := e.Start(def, queuety.State{"date": "2026-11-21", "rerun": true})
	Equal(t, "second dispatch returns the first id", b, a)
	Equal(t, "workflows", len(e.Workflows(driver.WorkflowFilter{})), 1)
	Equal(t, "jobs", len(e.Jobs(driver.JobFilter{})), 1)
	if _, ok := e.State(a)["rerun"]; ok {
		t.Fatal("the second dispatch's state was written")
	}
	// Concurrent dispatches with one key: one workflow.
	def.IdempotencyKey = "race"
	ids := make(chan int64, 8)
	for range 8 {
		go func() {
			id, err := e.C.DispatchWorkflow(context.Background(), def, nil)
			if err != nil {
				t.Errorf("dispatch: %v", err)
			}
			ids <- id
		}()
	}
	got := make([]int64, 0, 8)
	for range 8 {
		got = append(got, <-ids)
	}
	for _, id := range got {
		if id == 0 || id != got[0] {
			t.Fatalf("concurrent dispatches returned %v, want one workflow id", got)
		}
	}
	Equal(t, "workflows with the key", len(e.Workflows(driver.WorkflowFilter{Name: "nightly"})), 2)
}

func testWorkflowValidation(t *testing.T, e *Env) {
	long := make([]queuety.WorkflowStep, 256)
	for i := range long {
		long[i] = queuety.WorkflowStep{Type: queuety.StepSingle, Handler: "h"}
	}
	cases := []struct {
		name string
		def  queuety.WorkflowDefinition
		want error
	}{
		{"no steps", queuety.WorkflowDefinition{Name: "wf"}, queuety.ErrInvalidArgument},
		{"no name", queuety.WorkflowDefinition{Steps: steps("a")}, queuety.ErrInvalidArgument},
		{"empty handler", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "")}, queuety.ErrInvalidArgument},
		{"duplicate names", queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
			{Type: queuety.StepSingle, Handler: "a", Name: "x"}, {Type: queuety.StepSingle, Handler: "b", Name: "x"}}}, queuety.ErrInvalidArgument},
		{"256 steps", queuety.WorkflowDefinition{Name: "wf", Steps: long}, queuety.ErrInvalidArgument},
		{"bad priority", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), Priority: 9}, queuety.ErrInvalidArgument},
		{"sub-second deadline", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), ExecutionTimeout: time.Millisecond}, queuety.ErrInvalidTimeout},
		{"negative deadline", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), ExecutionTimeout: -time.Hour}, queuety.ErrInvalidTimeout},
		{"negative run timeout", queuety.WorkflowDefinition{Name: "wf", Steps: steps("a"), RunTimeout: -time.Second}, queuety.ErrInvalidTimeout},
		{"negative sleep", queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{{Type: queuety.StepDelay, Delay: -time.Second}}}, queuety.ErrInvalidArgument},
		{"internal handler", queuety.WorkflowDefinition{Name: "wf", Steps: steps("__queuety_delay")}, queuety.ErrInvalidArgument},
	}
	for _, c := range cases {
		if _, err := e.C.DispatchWorkflow(e.Ctx, c.def, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := e.C.DispatchWorkflow(e.Ctx, queuety.WorkflowDefinition{Name: "wf", Steps: steps("a")}, queuety.State{"_x": 1}); !errors.Is(err, queuety.ErrInvalidArgument) {
		t.Errorf("private initial key: %v", err)
	}
	Equal(t, "workflows written", len(e.Workflows(driver.WorkflowFilter{})), 0)
	Equal(t, "jobs written", len(e.Jobs(driver.JobFilter{})), 0)
}

func testDescribe(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "describe_me", ExecutionTimeout: time.Hour, RunTimeout: 10 * time.Minute,
		OnDeadline: "alert", Steps: []queuety.WorkflowStep{
			{Type: queuety.StepSingle, Handler: "a", Options: queuety.ResolveJobOptions(queuety.StartToClose(90 * time.Second))},
			{Type: queuety.StepSingle, Handler: "b", Options: queuety.ResolveJobOptions(queuety.MaxAttempts(2))},
		}}
	id := e.Start(def, queuety.State{"k": "v"})
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	w.HandleStep("b", func(context.Context, queuety.State) (queuety.State, error) { return nil, errors.New("nope") })
	e.Drain(w)
	d, err := e.C.DescribeWorkflow(e.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "status", d.Status, queuety.WorkflowRunning)
	Equal(t, "execution deadline", d.Deadlines.ExecutionDeadline, Epoch.Add(time.Hour).Format(time.RFC3339))
	Equal(t, "run deadline", d.Deadlines.RunDeadline, Epoch.Add(10*time.Minute).Format(time.RFC3339))
	Equal(t, "run", d.Deadlines.Run, 1)
	Equal(t, "execution timeout", d.Deadlines.ExecutionTimeoutSeconds, int64(3600))
	Equal(t, "steps", len(d.Steps), 2)
	Equal(t, "step 0 status", d.Steps[0].Status, "completed")
	Equal(t, "step 0 start-to-close", d.Steps[0].Timeouts.StartToClose, "PT1M30S")
	Equal(t, "step 1 status", d.Steps[1].Status, "pending")
	h := d.Steps[1].Jobs[0].History
	if len(h) != 1 || h[0].Outcome != "retried" || h[0].Error != "nope" {
		t.Fatalf("step 1 history = %+v", h)
	}
	Equal(t, "on_deadline", d.OnDeadline, "alert")
	if len(d.Timeline) < 5 || d.Timeline[0].Event != "workflow_started" {
		t.Fatalf("timeline = %+v", d.Timeline)
	}
	if _, err := e.C.DescribeWorkflow(e.Ctx, 424242); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("describe missing: %v", err)
	}
}

func init() {
	register("Workflows/MalformedStateFailsWorkflow", testMalformedState)
	register("Workflows/PHPOnlyStepEnqueuedForPHP", testPHPOnlyStep)
}

// insertWorkflow writes a workflow row and its first step job directly, as
// another runtime would.
func (e *Env) insertWorkflow(state string, handler string) (int64, int64) {
	e.T.Helper()
	var wfID, jobID int64
	err := e.C.Store().InTx(e.Ctx, func(tx driver.Tx) error {
		wf := &driver.Workflow{Name: "php_made", Status: queuety.WorkflowRunning, State: []byte(state), TotalSteps: 2, StartedAt: Epoch}
		if err := tx.WorkflowInsert(e.Ctx, wf); err != nil {
			return err
		}
		step := 0
		j := &driver.Job{Queue: "default", Handler: handler, Payload: []byte(`{"__queuety_runtime":{"max_attempts":3}}`),
			Status: queuety.JobPending, MaxAttempts: 3, AvailableAt: Epoch, WorkflowID: wf.ID, StepIndex: &step, CostUnits: 1, CreatedAt: Epoch}
		if err := tx.JobInsert(e.Ctx, []*driver.Job{j}); err != nil {
			return err
		}
		wfID, jobID = wf.ID, j.ID
		return nil
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return wfID, jobID
}

func testMalformedState(t *testing.T, e *Env) {
	wfID, jobID := e.insertWorkflow(`{"_steps":[{"type":"single","name":"0","class":"a"}`, "a")
	var called atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("a", counter(&called, nil))
	e.Drain(w)
	Equal(t, "handler called with an unreadable state", called.Load(), int64(0))
	j := e.Job(jobID)
	Equal(t, "job", j.Status, queuety.JobBuried)
	Equal(t, "attempts (the error is final)", j.Attempts, 1)
	Contains(t, "error", j.ErrorMessage, "malformed workflow state JSON")
	Equal(t, "workflow", e.Workflow(wfID).Status, queuety.WorkflowFailed)
}

func testPHPOnlyStep(t *testing.T, e *Env) {
	state := `{"items":[1,2],"_steps":[{"type":"single","name":"0","class":"a"},` +
		`{"type":"for_each","name":"each","items_key":"items","class":"App\\Steps\\Item","result_key":null,"mode":"all","quorum":null,"reducer_class":null,"compensation":null}],` +
		`"_queue":"default","_priority":0,"_max_attempts":3}`
	wfID, _ := e.insertWorkflow(state, "a")
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": 1}, nil })
	e.Drain(w)
	wf := e.Workflow(wfID)
	Equal(t, "status", wf.Status, queuety.WorkflowRunning)
	Equal(t, "current step", wf.CurrentStep, 1)
	placeholder := e.OneJob(driver.JobFilter{WorkflowID: wfID, Handler: "__queuety_for_each"})
	Equal(t, "placeholder payload, as Queuety writes it", string(placeholder.Payload), `{"step_index":1,"__queuety_runtime":{"max_attempts":3}}`)
	Equal(t, "placeholder cost", placeholder.CostUnits, 0)
	Equal(t, "left for a PHP worker", placeholder.Status, queuety.JobPending)
}
