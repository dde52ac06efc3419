package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// The durable-engine scenarios: workflow run and execution timeouts, the
// four activity timeouts, heartbeats, retries, fencing and signal+timer.
func init() {
	register("Durable/RunDeadlineWhileWaitingOnTimer", testRunDeadlineWhileSleeping)
	register("Durable/LateCompletionAfterRunDeadlineRejected", testLateAfterRunDeadline)
	register("Durable/ContinueAsNewKeepsExecutionDeadline", testContinueAsNew)
	register("Durable/StartToCloseRetriesThenTerminal", testStartToClose)
	register("Durable/ScheduleToCloseDuringBackoffIsTerminal", testScheduleToCloseDuringBackoff)
	register("Durable/ScheduleToCloseLeavesNoTimeForRetry", testScheduleToCloseNoTime)
	register("Durable/ScheduleToStartFreshWindowOnFailureRetry", testScheduleToStartFreshWindow)
	register("Durable/ScheduleToStartTimeoutRetries", testScheduleToStartTimeout)
	register("Durable/HeartbeatTimeout", testHeartbeatTimeout)
	register("Durable/HeartbeatBetweenScanAndEnforcementFences", testHeartbeatFencesScan)
	register("Durable/ConcurrentEnforcersOneTerminalRecord", testConcurrentEnforcers)
	register("Durable/LateCompletionAfterRedeliveryRejected", testLateAfterRedelivery)
	register("Durable/MicrosecondDeadlines", testMicrosecondDeadlines)
	register("Durable/FixedPriorityPicksTimeoutKind", testTimeoutPriority)
	register("Durable/SignalRacingTimerHasOneWinner", testSignalTimerRace)
	register("Durable/SignalTimeoutResumesWithMarker", testSignalTimeout)
	register("Durable/SignalBeatsTimer", testSignalBeatsTimer)
	register("Durable/NonRetryableFailsAtOnce", testStepNonRetryable)
	register("Durable/RetryPolicyStoredWithStep", testPolicySnapshot)
	register("Durable/HandlerContext", testHandlerContext)
	register("Durable/HeartbeatThrottleAndDetails", testHeartbeatThrottle)
	register("Durable/TimeoutValidation", testTimeoutValidation)
}

// failures returns the recorded failures of a workflow or job.
func (e *Env) failures(wfID, jobID int64) []*driver.Failure {
	e.T.Helper()
	f, err := e.C.Failures(e.Ctx, wfID, jobID)
	if err != nil {
		e.T.Fatal(err)
	}
	return f
}

// enforce runs the activity-timeout watchdog once.
func (e *Env) enforce() int {
	e.T.Helper()
	n, err := deadline.New(e.C).Timeouts(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return n
}

// sweep runs the workflow-deadline sweep once and returns how many
// workflows it expired.
func (e *Env) sweep() int {
	e.T.Helper()
	n, err := deadline.New(e.C).Deadlines(e.Ctx)
	if err != nil {
		e.T.Fatalf("deadline sweep: %v", err)
	}
	return n
}

// waitTimers fires the due wait-for-signal timers once and returns how
// many fired.
func (e *Env) waitTimers() int {
	e.T.Helper()
	n, err := deadline.New(e.C).WaitTimers(e.Ctx)
	if err != nil {
		e.T.Fatalf("wait timers: %v", err)
	}
	return n
}

// events returns a workflow's event rows, in order.
func (e *Env) events(id int64) []*driver.WorkflowEvent {
	e.T.Helper()
	var events []*driver.WorkflowEvent
	err := e.C.Store().InTx(e.Ctx, func(tx driver.Tx) (err error) { events, err = tx.EventList(e.Ctx, id); return err })
	if err != nil {
		e.T.Fatalf("events of workflow %d: %v", id, err)
	}
	return events
}

// recoverStale runs stale-claim recovery once and returns how many jobs it
// recovered.
func (e *Env) recoverStale() int {
	e.T.Helper()
	n, _, err := engine.OfClient(e.C).RecoverStale(e.Ctx, 100)
	if err != nil {
		e.T.Fatalf("recover stale: %v", err)
	}
	return n
}

func opts(o ...queuety.JobOption) queuety.JobSpec { return queuety.ResolveJobOptions(o...) }

func testRunDeadlineWhileSleeping(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "sleeper", RunTimeout: time.Hour, Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "a"},
		{Type: queuety.StepDelay, Delay: 2 * time.Hour},
		{Type: queuety.StepSingle, Handler: "b"},
	}}
	id := e.Start(def, nil)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	var b atomic.Int64
	w.HandleStep("b", counter(&b, nil))
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	Equal(t, "workflows expired by the run deadline while sleeping", e.sweep(), 1)
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "error", wf.ErrorMessage, "Run deadline exceeded")
	timer := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerDelay})
	Equal(t, "timer job cancelled (buried)", timer.Status, queuety.JobBuried)
	f := e.failures(id, 0)
	if len(f) != 1 || f[0].Category != driver.FailureTimeout || f[0].TimeoutKind != queuety.TimeoutRun {
		t.Fatalf("failures = %+v", f)
	}
	e.Clock.Advance(2 * time.Hour)
	e.Drain(w)
	Equal(t, "step after the timer ran", b.Load(), int64(0))
}

func testLateAfterRunDeadline(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", RunTimeout: time.Minute, Steps: steps("slow", "next")}, nil)
	jobs := e.ClaimOne("slow")
	e.Clock.Advance(2 * time.Minute)
	if err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: jobs[0], Output: queuety.State{"x": 1}}); err != nil {
		t.Fatal(err)
	}
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	Equal(t, "error", wf.ErrorMessage, "Run deadline exceeded")
	Equal(t, "current step", wf.CurrentStep, 0)
	if _, ok := e.State(id)["x"]; ok {
		t.Fatal("the late result was merged")
	}
	Equal(t, "jobs", len(e.Jobs(driver.JobFilter{WorkflowID: id})), 1)
}

func testContinueAsNew(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "paginate", ExecutionTimeout: 24 * time.Hour, RunTimeout: time.Hour,
		Steps: steps("page", "done")}
	id := e.Start(def, queuety.State{"cursor": 0})
	first := e.Workflow(id)
	w := e.Worker(nil)
	w.HandleStep("page", func(_ context.Context, s queuety.State) (queuety.State, error) {
		c, _ := s.Int("cursor")
		e.Clock.Advance(10 * time.Minute)
		if c < 3 {
			return nil, queuety.ContinueAsNew(queuety.State{"cursor": c + 1})
		}
		return queuety.State{"finished_at_cursor": c}, nil
	})
	w.HandleStep("done", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowCompleted)
	Equal(t, "execution deadline kept", wf.DeadlineAt, first.DeadlineAt)
	Equal(t, "run number", wf.RunNumber, 4)
	Equal(t, "run deadline recomputed", wf.RunDeadlineAt, Epoch.Add(30*time.Minute+time.Hour))
	if !wf.RunDeadlineAt.After(first.RunDeadlineAt) {
		t.Fatal("run deadline not refreshed")
	}
	st := e.State(id)
	Equal(t, "fresh state each run", len(st), 2)
	Equal(t, "cursor", st["cursor"], any(int64(3)))
	if secs, _ := e.rawState(id).Get("_deadline_seconds"); secs != any(int64(86400)) {
		t.Fatalf("_deadline_seconds lost: %v", secs)
	}
}

func testStartToClose(t *testing.T, e *Env) {
	id := e.Dispatch("slow", nil, queuety.StartToClose(10*time.Second), queuety.Retry(2, queuety.BackoffSeconds(5)))
	jobs := e.ClaimOne("slow")
	Equal(t, "start-to-close deadline", e.Job(id).StartToCloseAt, Epoch.Add(10*time.Second))
	Equal(t, "ctx deadline in JobInfo", jobs[0].Info().Deadline, Epoch.Add(10*time.Second))
	e.Clock.Advance(9 * time.Second)
	Equal(t, "enforced early", e.enforce(), 0)
	e.Clock.Advance(2 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	j := e.Job(id)
	Equal(t, "status after first timeout", j.Status, queuety.JobPending)
	Equal(t, "retry due", j.AvailableAt, Epoch.Add(16*time.Second))
	if errs := e.Complete(jobs...); !errors.Is(errs[0], queuety.ErrStaleAttempt) {
		t.Fatalf("result of the timed-out attempt: %v", errs[0])
	}
	e.Clock.Advance(5 * time.Second)
	jobs = e.ClaimOne("slow")
	Equal(t, "attempt", jobs[0].Job.Attempts, 2)
	e.Clock.Advance(11 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	j = e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	f := e.failures(0, id)
	Equal(t, "failure records", len(f), 2)
	if f[1].Category != driver.FailureTimeout || f[1].TimeoutKind != queuety.TimeoutStartToClose || f[1].Attempt != 2 {
		t.Fatalf("terminal failure = %+v", f[1])
	}
	Contains(t, "error", j.ErrorMessage, "start-to-close deadline expired")
}

func testScheduleToCloseDuringBackoff(t *testing.T, e *Env) {
	id := e.Dispatch("flaky", nil, queuety.ScheduleToClose(60*time.Second), queuety.Retry(10, queuety.BackoffSeconds(30)))
	e.Clock.Advance(10 * time.Second)
	jobs := e.ClaimOne("flaky")
	if err := e.Fail(jobs[0], errors.New("503")); err != nil {
		t.Fatal(err)
	}
	Equal(t, "retry due", e.Job(id).AvailableAt, Epoch.Add(40*time.Second))
	e.Clock.Advance(51 * time.Second) // nobody picked it up; the whole-job deadline passes
	Equal(t, "enforced", e.enforce(), 1)
	j := e.Job(id)
	Equal(t, "status (terminal with 9 attempts left)", j.Status, queuety.JobBuried)
	f := e.failures(0, id)
	if last := f[len(f)-1]; last.Category != driver.FailureTimeout || last.TimeoutKind != queuety.TimeoutScheduleToClose {
		t.Fatalf("failures = %+v", f)
	}
}

func testScheduleToCloseNoTime(t *testing.T, e *Env) {
	id := e.Dispatch("flaky", nil, queuety.ScheduleToClose(60*time.Second), queuety.Retry(10, queuety.BackoffSeconds(120)))
	jobs := e.ClaimOne("flaky")
	if err := e.Fail(jobs[0], errors.New("503")); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "status: the next attempt could only start after the deadline", j.Status, queuety.JobBuried)
	Contains(t, "error", j.ErrorMessage, "schedule-to-close", "503")
}

func testScheduleToStartFreshWindow(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(30*time.Second), queuety.Retry(3, queuety.BackoffSeconds(5)))
	Equal(t, "initial window", e.Job(id).ScheduleToStartAt, Epoch.Add(30*time.Second))
	e.Clock.Advance(20 * time.Second)
	jobs := e.ClaimOne("h")
	Equal(t, "window closed at claim", e.Job(id).ScheduleToStartAt, time.Time{})
	if err := e.Fail(jobs[0], errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "fresh window after a failure retry (due + 30 s)", j.ScheduleToStartAt, Epoch.Add(55*time.Second))
	e.Clock.Set(Epoch.Add(34 * time.Second)) // past the first window, inside the fresh one
	Equal(t, "enforced against the old window", e.enforce(), 0)
	Equal(t, "status", e.Job(id).Status, queuety.JobPending)
}

func testScheduleToStartTimeout(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(30*time.Second), queuety.Retry(2, queuety.BackoffSeconds(0)))
	e.Clock.Advance(31 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	j := e.Job(id)
	Equal(t, "status after the first queue timeout", j.Status, queuety.JobPending)
	Equal(t, "the timed-out wait counts as an attempt", j.Attempts, 1)
	Equal(t, "fresh window", j.ScheduleToStartAt, e.Clock.Now().Truncate(time.Second).Add(30*time.Second))
	e.Clock.Advance(31 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	Equal(t, "status", e.Job(id).Status, queuety.JobBuried)
	// A claim after the window also times out instead of running.
	late := e.Dispatch("h2", nil, queuety.ScheduleToStart(10*time.Second), queuety.MaxAttempts(1))
	e.Clock.Advance(11 * time.Second)
	Equal(t, "claimed past schedule-to-start", len(e.Claim(1, "h2")), 0)
	Equal(t, "status", e.Job(late).Status, queuety.JobBuried)
}

func testHeartbeatTimeout(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "long", MaxAttempts: 2, Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "crunch", Options: opts(queuety.HeartbeatTimeout(20*time.Second), queuety.WithBackoff(queuety.BackoffSeconds(0)))},
	}}
	id := e.Start(def, nil)
	jobs := e.ClaimOne("crunch")
	j := e.Job(jobs[0].Job.ID)
	Equal(t, "heartbeat deadline at claim", j.HeartbeatDeadline, Epoch.Add(20*time.Second))
	e.Clock.Advance(15 * time.Second)
	if err := engine.OfClient(e.C).Heartbeat(e.Ctx, jobs[0], []byte(`{"done":10}`)); err != nil {
		t.Fatal(err)
	}
	Equal(t, "deadline pushed out", e.Job(j.ID).HeartbeatDeadline, Epoch.Add(35*time.Second))
	e.Clock.Advance(15 * time.Second)
	Equal(t, "enforced before the new deadline", e.enforce(), 0)
	e.Clock.Advance(6 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	Equal(t, "retried", e.Job(j.ID).Status, queuety.JobPending)
	if err := engine.OfClient(e.C).Heartbeat(e.Ctx, jobs[0], nil); !errors.Is(err, queuety.ErrStaleAttempt) {
		t.Fatalf("heartbeat after the timeout: %v", err)
	}
	second := e.ClaimOne("crunch")
	Equal(t, "next attempt reads the last details", string(second[0].Info().LastDetails), `{"done":10}`)
	e.Clock.Advance(21 * time.Second)
	Equal(t, "enforced", e.enforce(), 1)
	wf := e.Workflow(id)
	Equal(t, "workflow failed", wf.Status, queuety.WorkflowFailed)
	Contains(t, "error", wf.ErrorMessage, "heartbeat deadline expired", "last heartbeat: never")
}

func testHeartbeatFencesScan(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.HeartbeatTimeout(10*time.Second))
	jobs := e.ClaimOne("h")
	e.Clock.Advance(11 * time.Second)
	var found []*driver.Job
	err := e.C.Store().InTx(e.Ctx, func(tx driver.Tx) (err error) {
		found, err = tx.JobFindTimedOut(e.Ctx, driver.TimedOutParams{Now: e.Clock.Now(), Limit: 10})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "scan found the job", len(found), 1)
	if err := engine.OfClient(e.C).Heartbeat(e.Ctx, jobs[0], nil); err != nil { // arrives between scan and enforcement
		t.Fatal(err)
	}
	acted, err := engine.OfClient(e.C).EnforceTimeout(e.Ctx, id)
	if err != nil || acted {
		t.Fatalf("enforced despite the heartbeat: %v %v", acted, err)
	}
	Equal(t, "status", e.Job(id).Status, queuety.JobProcessing)
	if errs := e.Complete(jobs...); errs[0] != nil {
		t.Fatal(errs[0])
	}
}

func testConcurrentEnforcers(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToClose(time.Minute), queuety.MaxAttempts(5))
	e.ClaimOne("h")
	e.Clock.Advance(2 * time.Minute)
	var acted atomic.Int64
	var wg sync.WaitGroup
	clients := e.Clients(8)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := engine.OfClient(c).EnforceTimeout(context.Background(), id)
			if err != nil {
				t.Errorf("enforce: %v", err)
			}
			if ok {
				acted.Add(1)
			}
		}()
	}
	wg.Wait()
	Equal(t, "enforcers that acted", acted.Load(), int64(1))
	Equal(t, "terminal failure records", len(e.failures(0, id)), 1)
	Equal(t, "buried log rows", len(e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried})), 1)
}

func testLateAfterRedelivery(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b")}, nil)
	first := e.ClaimOne("a")
	info1 := first[0].Info()
	e.Clock.Advance(queuety.DefaultStaleTimeout + time.Minute)
	Equal(t, "recovered", e.recoverStale(), 1)
	e.Clock.Advance(10 * time.Minute) // past the backoff
	second := e.ClaimOne("a")
	info2 := second[0].Info()
	Equal(t, "execution id is stable", info2.JobID, info1.JobID)
	if info2.AttemptID == info1.AttemptID || info2.Attempt != 2 {
		t.Fatalf("attempt identity: %+v vs %+v", info1, info2)
	}
	err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: first[0], Output: queuety.State{"from": "attempt 1"}})
	if !errors.Is(err, queuety.ErrStaleAttempt) {
		t.Fatalf("late completion from attempt 1: %v", err)
	}
	Equal(t, "current step unchanged", e.Workflow(id).CurrentStep, 0)
	if err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: second[0], Output: queuety.State{"from": "attempt 2"}}); err != nil {
		t.Fatal(err)
	}
	Equal(t, "state from the owning attempt", e.State(id).String("from"), "attempt 2")
}

func testMicrosecondDeadlines(t *testing.T, e *Env) {
	e.Clock.Set(Epoch.Add(500 * time.Millisecond))
	id := e.Dispatch("h", nil, queuety.StartToClose(1100*time.Millisecond))
	e.ClaimOne("h")
	Equal(t, "deadline keeps microseconds", e.Job(id).StartToCloseAt, Epoch.Add(1600*time.Millisecond))
	e.Clock.Set(Epoch.Add(1500 * time.Millisecond))
	Equal(t, "enforced 100 ms early", e.enforce(), 0)
	e.Clock.Set(Epoch.Add(1700 * time.Millisecond))
	Equal(t, "enforced in the same second", e.enforce(), 1)
}

func testTimeoutPriority(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.StartToClose(10*time.Second), queuety.HeartbeatTimeout(5*time.Second),
		queuety.ScheduleToClose(20*time.Second), queuety.MaxAttempts(3))
	e.ClaimOne("h")
	e.Clock.Advance(time.Minute) // every deadline has passed
	Equal(t, "enforced", e.enforce(), 1)
	f := e.failures(0, id)
	if len(f) != 1 || f[0].TimeoutKind != queuety.TimeoutScheduleToClose {
		t.Fatalf("recorded = %+v", f)
	}
	id2 := e.Dispatch("h2", nil, queuety.StartToClose(10*time.Second), queuety.HeartbeatTimeout(5*time.Second), queuety.MaxAttempts(3))
	e.ClaimOne("h2")
	e.Clock.Advance(time.Minute)
	Equal(t, "enforced", e.enforce(), 1)
	f = e.failures(0, id2)
	if len(f) != 1 || f[0].TimeoutKind != queuety.TimeoutHeartbeat {
		t.Fatalf("recorded = %+v", f)
	}
}

// waitDef is a workflow waiting for "approve" with a timeout.
func waitDef(name string) queuety.WorkflowDefinition {
	return queuety.WorkflowDefinition{Name: name, Steps: []queuety.WorkflowStep{
		{Type: queuety.StepWaitForSignal, Signal: "approve", Timeout: time.Hour},
		{Type: queuety.StepSingle, Handler: "next"},
	}}
}

func testSignalTimerRace(t *testing.T, e *Env) {
	const rounds = 12
	ids := make([]int64, rounds)
	for i := range ids {
		ids[i] = e.Start(waitDef("race"), nil)
	}
	w := e.Worker(nil)
	e.Drain(w) // every wait placeholder runs: all waiting
	e.Clock.Advance(time.Hour + time.Second)
	var wg sync.WaitGroup
	sigClient, timerClient := e.Client(), e.Client()
	for _, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := sigClient.Signal(context.Background(), id, "approve", queuety.State{"by": "ops"}); err != nil {
				t.Errorf("signal: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, _, err := engine.OfClient(timerClient).FireWaitTimeouts(context.Background(), 5); err != nil {
				t.Errorf("timer: %v", err)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		wf := e.Workflow(id)
		Equal(t, "resumed", wf.Status, queuety.WorkflowRunning)
		Equal(t, "step", wf.CurrentStep, 1)
		st := e.State(id)
		timedOut, ok := st[queuety.TimedOutKey("approve")].(bool)
		if !ok {
			t.Fatalf("workflow %d: no timed-out marker in %v", id, st)
		}
		if _, hasPayload := st["by"]; hasPayload == timedOut {
			t.Fatalf("workflow %d: timed_out=%v but payload present=%v", id, timedOut, hasPayload)
		}
		Equal(t, "next step enqueued once", len(e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "next"})), 1)
		resumed := 0
		for _, ev := range e.events(id) {
			if ev.Event == driver.EventWorkflowResumed {
				resumed++
			}
		}
		Equal(t, "workflow_resumed events", resumed, 1)
		loser := false
		for _, l := range e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug}) {
			loser = loser || strings.Contains(string(l.Context), "signal_ignored") || strings.Contains(string(l.Context), "timer_cancelled")
		}
		if !loser {
			t.Fatalf("workflow %d: the loser was not recorded", id)
		}
	}
}

func testSignalTimeout(t *testing.T, e *Env) {
	id := e.Start(waitDef("approval"), queuety.State{"doc": 1})
	var seen atomic.Value
	w := e.Worker(nil)
	w.HandleStep("next", func(_ context.Context, s queuety.State) (queuety.State, error) {
		seen.Store(s.Bool(queuety.TimedOutKey("approve")))
		return nil, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	Equal(t, "wait deadline", wf.WaitDeadlineAt, Epoch.Add(time.Hour))
	e.Clock.Advance(59 * time.Minute)
	Equal(t, "timers fired a minute early", e.waitTimers(), 0)
	e.Clock.Advance(time.Minute)
	Equal(t, "timers fired when due", e.waitTimers(), 1)
	e.Drain(w)
	Equal(t, "next step saw the timed-out marker", seen.Load(), any(true))
	Equal(t, "status", e.Workflow(id).Status, queuety.WorkflowCompleted)
	if err := e.C.Signal(e.Ctx, id, "approve", queuety.State{"late": true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.State(id)["late"]; ok {
		t.Fatal("a late signal changed the state")
	}
}

func testSignalBeatsTimer(t *testing.T, e *Env) {
	id := e.Start(waitDef("approval"), nil)
	w := e.Worker(nil)
	w.HandleStep("next", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	e.Clock.Advance(30 * time.Minute)
	if err := e.C.Signal(e.Ctx, id, "approve", queuety.State{"by": "ana"}); err != nil {
		t.Fatal(err)
	}
	st := e.State(id)
	Equal(t, "timed out", st[queuety.TimedOutKey("approve")], any(false))
	Equal(t, "payload merged", st.String("by"), "ana")
	Equal(t, "timer cancelled", e.Workflow(id).WaitDeadlineAt, time.Time{})
	e.Clock.Advance(time.Hour)
	Equal(t, "cancelled timers fired", e.waitTimers(), 0)
}

func testStepNonRetryable(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", MaxAttempts: 5, Steps: steps("validate")}, nil)
	var calls atomic.Int64
	w := e.Worker(nil)
	w.HandleStep("validate", func(context.Context, queuety.State) (queuety.State, error) {
		calls.Add(1)
		return nil, queuety.NonRetryable(errors.New("schema mismatch"))
	})
	e.Drain(w)
	Equal(t, "attempts used", calls.Load(), int64(1))
	wf := e.Workflow(id)
	Equal(t, "status", wf.Status, queuety.WorkflowFailed)
	f := e.failures(id, 0)
	if len(f) != 1 || !f[0].NonRetryable || f[0].Attempt != 1 || f[0].Category != driver.FailureApplication {
		t.Fatalf("failures = %+v", f)
	}
}

func testPolicySnapshot(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "a", Options: opts(queuety.Retry(4, queuety.BackoffSeconds(7, 11)),
			queuety.StartToClose(90*time.Second), queuety.ScheduleToStart(time.Minute))},
	}}
	id := e.Start(def, nil)
	job := e.OneJob(driver.JobFilter{WorkflowID: id})
	Equal(t, "payload carries the policy", string(job.Payload),
		`{"__queuety_runtime":{"max_attempts":4,"backoff":[7,11],"timeout_seconds":90,"schedule_to_start_ms":60000,"start_to_close_ms":90000}}`)
	Equal(t, "max_attempts column", job.MaxAttempts, 4)
	// A later deploy changes the definition; the enqueued step keeps its rules.
	err := e.C.Store().InTx(e.Ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		changed := strings.Replace(string(wf.State), `"backoff":[7,11]`, `"backoff":[999]`, 1)
		if changed == string(wf.State) {
			return errors.New("the stored definition has no backoff [7,11] to change: " + changed)
		}
		wf.State = []byte(changed)
		return tx.WorkflowUpdate(e.Ctx, wf)
	})
	if err != nil {
		t.Fatalf("change the stored definition: %v", err)
	}
	claimed := e.ClaimOne("a")
	if err := engine.OfClient(e.C).Finish(e.Ctx, &engine.Result{Claimed: claimed[0], Err: errors.New("x"), StartedAt: e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	Equal(t, "backoff from the step's own policy", e.Job(job.ID).AvailableAt, Epoch.Add(7*time.Second))
}

func testHandlerContext(t *testing.T, e *Env) {
	e.Dispatch("inspect", queuety.State{"k": "v"}, queuety.StartToClose(time.Minute), queuety.MaxAttempts(2),
		queuety.WithBackoff(queuety.BackoffSeconds(0)))
	var infos []queuety.JobInfo
	var deadlines []time.Duration
	w := e.Worker(nil)
	w.HandleJob("inspect", func(ctx context.Context, p queuety.Payload) error {
		info, ok := queuety.JobInfoFrom(ctx)
		if !ok {
			return errors.New("no JobInfo in ctx")
		}
		infos = append(infos, info)
		dl, ok := ctx.Deadline()
		if !ok {
			return errors.New("no ctx deadline")
		}
		deadlines = append(deadlines, time.Until(dl))
		if len(infos) == 1 {
			_ = queuety.Heartbeat(ctx, map[string]int{"page": 2})
			return errors.New("first attempt fails")
		}
		if last := string(queuety.LastHeartbeat(ctx)); last != `{"page":2}` {
			return errors.New("last heartbeat = " + last)
		}
		return nil
	})
	e.Drain(w)
	Equal(t, "attempts", len(infos), 2)
	Equal(t, "ctx deadlines seen", len(deadlines), 2)
	Equal(t, "same execution id", infos[0].JobID, infos[1].JobID)
	if infos[0].AttemptID == infos[1].AttemptID || infos[1].Attempt != 2 || infos[1].MaxAttempts != 2 {
		t.Fatalf("infos = %+v", infos)
	}
	for _, d := range deadlines {
		if d <= 50*time.Second || d > time.Minute {
			t.Fatalf("ctx deadline %s away, want about 1 minute", d)
		}
	}
	Equal(t, "status", e.Job(infos[0].JobID).Status, queuety.JobCompleted)
}

func testHeartbeatThrottle(t *testing.T, e *Env) {
	id := e.Dispatch("crunch", nil, queuety.HeartbeatTimeout(10*time.Second))
	w := e.Worker(nil)
	var results []string
	w.HandleJob("crunch", func(ctx context.Context, _ queuety.Payload) error {
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 1}) // sent at once
		e.Clock.Advance(3 * time.Second)
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 2}) // inside the 8 s window: buffered
		j := e.Job(id)
		results = append(results, string(j.HeartbeatData), j.LastHeartbeatAt.Sub(Epoch).String())
		e.Clock.Advance(6 * time.Second)
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 3}) // window over: sent, replacing n=2
		j = e.Job(id)
		results = append(results, string(j.HeartbeatData), j.LastHeartbeatAt.Sub(Epoch).String())
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 4}) // buffered; flushed when the handler returns
		return nil
	})
	e.Drain(w)
	Equal(t, "results", strings.Join(results, " "), `{"n":1} 0s {"n":3} 9s`)
	Equal(t, "buffered details flushed at the end", string(e.Job(id).HeartbeatData), `{"n":4}`)
	var raw json.RawMessage = e.Job(id).HeartbeatData
	if !json.Valid(raw) {
		t.Fatal("heartbeat_data is not JSON")
	}
}

func testTimeoutValidation(t *testing.T, e *Env) {
	base := queuety.WorkflowDefinition{Name: "wf", Steps: steps("a")}
	exec, run := base, base
	exec.ExecutionTimeout = 500 * time.Millisecond
	run.RunTimeout = -time.Second
	for what, c := range map[string]struct {
		def  queuety.WorkflowDefinition
		want string
	}{
		"execution": {exec, "execution timeout must be at least 1 second"},
		"run":       {run, "run timeout must be at least 1 second"},
	} {
		_, err := e.C.DispatchWorkflow(e.Ctx, c.def, nil)
		if !errors.Is(err, queuety.ErrInvalidTimeout) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := e.C.Dispatch(e.Ctx, "h", nil, queuety.ScheduleToStart(999*time.Millisecond))
	if !errors.Is(err, queuety.ErrInvalidTimeout) || !strings.Contains(err.Error(), "schedule-to-start timeout must be at least 1 second") {
		t.Errorf("schedule-to-start: %v", err)
	}
	wait := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{{Type: queuety.StepWaitForSignal, Signal: "s", Timeout: time.Millisecond}}}
	if _, err := e.C.DispatchWorkflow(e.Ctx, wait, nil); !errors.Is(err, queuety.ErrInvalidTimeout) {
		t.Errorf("signal timeout: %v", err)
	}
}
