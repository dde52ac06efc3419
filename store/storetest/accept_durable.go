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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
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
	require.NoError(e.T, err)
	return f
}

// enforce runs the activity-timeout watchdog once.
func (e *Env) enforce() int {
	e.T.Helper()
	n, err := deadline.New(e.C).Timeouts(e.Ctx)
	require.NoError(e.T, err)
	return n
}

// sweep runs the workflow-deadline sweep once and returns how many
// workflows it expired.
func (e *Env) sweep() int {
	e.T.Helper()
	n, err := deadline.New(e.C).Deadlines(e.Ctx)
	require.NoError(e.T, err, "deadline sweep")
	return n
}

// waitTimers fires the due wait-for-signal timers once and returns how
// many fired.
func (e *Env) waitTimers() int {
	e.T.Helper()
	n, err := deadline.New(e.C).WaitTimers(e.Ctx)
	require.NoError(e.T, err, "wait timers")
	return n
}

// events returns a workflow's event rows, in order.
func (e *Env) events(id int64) []*driver.WorkflowEvent {
	e.T.Helper()
	var events []*driver.WorkflowEvent
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { events, err = tx.EventList(e.Ctx, id); return err })
	require.NoErrorf(e.T, err, "events of workflow %d", id)
	return events
}

// recoverStale runs stale-claim recovery once and returns how many jobs it
// recovered.
func (e *Env) recoverStale() int {
	e.T.Helper()
	n, _, err := sweep.RecoverStale(e.Ctx, e.eng, 100)
	require.NoError(e.T, err, "recover stale")
	return n
}

func opts(o ...queuety.JobOption) queuetytype.JobSpec { return queuety.ResolveJobOptions(o...) }

func testRunDeadlineWhileSleeping(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "sleeper", RunTimeout: time.Hour, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "a"},
		{Type: queuetytype.StepDelay, Delay: 2 * time.Hour},
		{Type: queuetytype.StepSingle, Handler: "b"},
	}}
	id := e.Start(def, nil)
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	var b atomic.Int64
	w.HandleStep("b", counter(&b, nil))
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 1, e.sweep(), "workflows expired by the run deadline while sleeping")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Run deadline exceeded", wf.ErrorMessage, "error")
	timer := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerDelay})
	assert.Equal(t, queuetytype.JobBuried, timer.Status, "timer job cancelled (buried)")
	f := e.failures(id, 0)
	require.Len(t, f, 1, "failures")
	assert.Equal(t, driver.FailureTimeout, f[0].Category, "failure category")
	assert.Equal(t, queuetytype.TimeoutRun, f[0].TimeoutKind, "failure timeout_kind")
	e.Clock.Advance(2 * time.Hour)
	e.Drain(w)
	assert.Equal(t, int64(0), b.Load(), "step after the timer ran")
}

func testLateAfterRunDeadline(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", RunTimeout: time.Minute, Steps: steps("slow", "next")}, nil)
	jobs := e.ClaimOne("slow")
	e.Clock.Advance(2 * time.Minute)
	require.NoError(t, e.eng.Finish(e.Ctx, &engine.Result{Claimed: jobs[0], Output: queuety.State{"x": 1}}))
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Equal(t, "Run deadline exceeded", wf.ErrorMessage, "error")
	assert.Equal(t, 0, wf.CurrentStep, "current step")
	assert.NotContains(t, e.State(id), "x", "the late result was merged")
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id}), 1, "jobs")
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
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status")
	assert.Equal(t, first.DeadlineAt, wf.DeadlineAt, "execution deadline kept")
	assert.Equal(t, 4, wf.RunNumber, "run number")
	assert.Equal(t, Epoch.Add(30*time.Minute+time.Hour), wf.RunDeadlineAt, "run deadline recomputed")
	assert.True(t, wf.RunDeadlineAt.After(first.RunDeadlineAt), "run deadline not refreshed")
	st := e.State(id)
	require.Len(t, st, 2, "fresh state each run")
	assert.Equal(t, any(int64(3)), st["cursor"], "cursor")
	secs, _ := e.rawState(id).Get("_deadline_seconds")
	assert.Equal(t, any(int64(86400)), secs, "_deadline_seconds")
}

func testStartToClose(t *testing.T, e *Env) {
	id := e.Dispatch("slow", nil, queuety.StartToClose(10*time.Second), queuety.Retry(2, queuety.BackoffSeconds(5)))
	jobs := e.ClaimOne("slow")
	assert.Equal(t, Epoch.Add(10*time.Second), e.Job(id).StartToCloseAt, "start-to-close deadline")
	assert.Equal(t, Epoch.Add(10*time.Second), jobs[0].Info().Deadline, "ctx deadline in JobInfo")
	e.Clock.Advance(9 * time.Second)
	assert.Equal(t, 0, e.enforce(), "enforced early")
	e.Clock.Advance(2 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status after first timeout")
	assert.Equal(t, Epoch.Add(16*time.Second), j.AvailableAt, "retry due")
	require.ErrorIs(t, e.Complete(jobs...)[0], queuetytype.ErrStaleAttempt, "result of the timed-out attempt")
	e.Clock.Advance(5 * time.Second)
	jobs = e.ClaimOne("slow")
	assert.Equal(t, 2, jobs[0].Job.Attempts, "attempt")
	e.Clock.Advance(11 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	j = e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	f := e.failures(0, id)
	require.Len(t, f, 2, "failure records")
	assert.Equal(t, driver.FailureTimeout, f[1].Category, "terminal failure category")
	assert.Equal(t, queuetytype.TimeoutStartToClose, f[1].TimeoutKind, "terminal failure timeout_kind")
	assert.Equal(t, 2, f[1].Attempt, "terminal failure attempt")
	assert.Contains(t, j.ErrorMessage, "start-to-close deadline expired", "error")
}

func testScheduleToCloseDuringBackoff(t *testing.T, e *Env) {
	id := e.Dispatch("flaky", nil, queuety.ScheduleToClose(60*time.Second), queuety.Retry(10, queuety.BackoffSeconds(30)))
	e.Clock.Advance(10 * time.Second)
	jobs := e.ClaimOne("flaky")
	require.NoError(t, e.Fail(jobs[0], errors.New("503")))
	assert.Equal(t, Epoch.Add(40*time.Second), e.Job(id).AvailableAt, "retry due")
	e.Clock.Advance(51 * time.Second) // nobody picked it up; the whole-job deadline passes
	assert.Equal(t, 1, e.enforce(), "enforced")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status (terminal with 9 attempts left)")
	f := e.failures(0, id)
	require.NotEmpty(t, f, "failures")
	last := f[len(f)-1]
	assert.Equal(t, driver.FailureTimeout, last.Category, "last failure category")
	assert.Equal(t, queuetytype.TimeoutScheduleToClose, last.TimeoutKind, "last failure timeout_kind")
}

func testScheduleToCloseNoTime(t *testing.T, e *Env) {
	id := e.Dispatch("flaky", nil, queuety.ScheduleToClose(60*time.Second), queuety.Retry(10, queuety.BackoffSeconds(120)))
	jobs := e.ClaimOne("flaky")
	require.NoError(t, e.Fail(jobs[0], errors.New("503")))
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status: the next attempt could only start after the deadline")
	assert.Contains(t, j.ErrorMessage, "schedule-to-close", "error")
	assert.Contains(t, j.ErrorMessage, "503", "error")
}

func testScheduleToStartFreshWindow(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(30*time.Second), queuety.Retry(3, queuety.BackoffSeconds(5)))
	assert.Equal(t, Epoch.Add(30*time.Second), e.Job(id).ScheduleToStartAt, "initial window")
	e.Clock.Advance(20 * time.Second)
	jobs := e.ClaimOne("h")
	assert.Equal(t, time.Time{}, e.Job(id).ScheduleToStartAt, "window closed at claim")
	require.NoError(t, e.Fail(jobs[0], errors.New("boom")))
	j := e.Job(id)
	assert.Equal(t, Epoch.Add(55*time.Second), j.ScheduleToStartAt, "fresh window after a failure retry (due + 30 s)")
	e.Clock.Set(Epoch.Add(34 * time.Second)) // past the first window, inside the fresh one
	assert.Equal(t, 0, e.enforce(), "enforced against the old window")
	assert.Equal(t, queuetytype.JobPending, e.Job(id).Status, "status")
}

func testScheduleToStartTimeout(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(30*time.Second), queuety.Retry(2, queuety.BackoffSeconds(0)))
	e.Clock.Advance(31 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status after the first queue timeout")
	assert.Equal(t, 1, j.Attempts, "the timed-out wait counts as an attempt")
	assert.Equal(t, e.Clock.Now().Truncate(time.Second).Add(30*time.Second), j.ScheduleToStartAt, "fresh window")
	e.Clock.Advance(31 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	assert.Equal(t, queuetytype.JobBuried, e.Job(id).Status, "status")
	// A claim after the window also times out instead of running.
	late := e.Dispatch("h2", nil, queuety.ScheduleToStart(10*time.Second), queuety.MaxAttempts(1))
	e.Clock.Advance(11 * time.Second)
	assert.Empty(t, e.Claim(1, "h2"), "claimed past schedule-to-start")
	assert.Equal(t, queuetytype.JobBuried, e.Job(late).Status, "status")
}

func testHeartbeatTimeout(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "long", MaxAttempts: 2, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "crunch", Options: opts(queuety.HeartbeatTimeout(20*time.Second), queuety.WithBackoff(queuety.BackoffSeconds(0)))},
	}}
	id := e.Start(def, nil)
	jobs := e.ClaimOne("crunch")
	j := e.Job(jobs[0].Job.ID)
	assert.Equal(t, Epoch.Add(20*time.Second), j.HeartbeatDeadline, "heartbeat deadline at claim")
	e.Clock.Advance(15 * time.Second)
	require.NoError(t, e.eng.Heartbeat(e.Ctx, jobs[0], []byte(`{"done":10}`)))
	assert.Equal(t, Epoch.Add(35*time.Second), e.Job(j.ID).HeartbeatDeadline, "deadline pushed out")
	e.Clock.Advance(15 * time.Second)
	assert.Equal(t, 0, e.enforce(), "enforced before the new deadline")
	e.Clock.Advance(6 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	assert.Equal(t, queuetytype.JobPending, e.Job(j.ID).Status, "retried")
	require.ErrorIs(t, e.eng.Heartbeat(e.Ctx, jobs[0], nil), queuetytype.ErrStaleAttempt, "heartbeat after the timeout")
	second := e.ClaimOne("crunch")
	assert.Equal(t, `{"done":10}`, string(second[0].Info().LastDetails), "next attempt reads the last details")
	e.Clock.Advance(21 * time.Second)
	assert.Equal(t, 1, e.enforce(), "enforced")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "workflow failed")
	assert.Contains(t, wf.ErrorMessage, "heartbeat deadline expired", "error")
	assert.Contains(t, wf.ErrorMessage, "last heartbeat: never", "error")
}

func testHeartbeatFencesScan(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.HeartbeatTimeout(10*time.Second))
	jobs := e.ClaimOne("h")
	e.Clock.Advance(11 * time.Second)
	var found []*driver.Job
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) {
		found, err = tx.JobFindTimedOut(e.Ctx, driver.TimedOutParams{Now: e.Clock.Now(), Limit: 10})
		return err
	})
	require.NoError(t, err)
	assert.Len(t, found, 1, "scan found the job")
	// The heartbeat arrives between scan and enforcement.
	require.NoError(t, e.eng.Heartbeat(e.Ctx, jobs[0], nil))
	acted, err := e.eng.EnforceTimeout(e.Ctx, id)
	require.NoError(t, err, "enforce")
	assert.False(t, acted, "enforced despite the heartbeat")
	assert.Equal(t, queuetytype.JobProcessing, e.Job(id).Status, "status")
	require.NoError(t, e.Complete(jobs...)[0])
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
			ok, err := clientseam.Engine(c).EnforceTimeout(context.Background(), id)
			assert.NoError(t, err, "enforce")
			if ok {
				acted.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), acted.Load(), "enforcers that acted")
	assert.Len(t, e.failures(0, id), 1, "terminal failure records")
	assert.Len(t, e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried}), 1, "buried log rows")
}

func testLateAfterRedelivery(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "wf", Steps: steps("a", "b")}, nil)
	first := e.ClaimOne("a")
	info1 := first[0].Info()
	e.Clock.Advance(queuetytype.DefaultStaleTimeout + time.Minute)
	assert.Equal(t, 1, e.recoverStale(), "recovered")
	e.Clock.Advance(10 * time.Minute) // past the backoff
	second := e.ClaimOne("a")
	info2 := second[0].Info()
	assert.Equal(t, info1.JobID, info2.JobID, "execution id is stable")
	assert.NotEqual(t, info1.AttemptID, info2.AttemptID, "attempt id of the redelivery")
	assert.Equal(t, 2, info2.Attempt, "attempt of the redelivery")
	err := e.eng.Finish(e.Ctx, &engine.Result{Claimed: first[0], Output: queuety.State{"from": "attempt 1"}})
	require.ErrorIs(t, err, queuetytype.ErrStaleAttempt, "late completion from attempt 1")
	assert.Equal(t, 0, e.Workflow(id).CurrentStep, "current step unchanged")
	require.NoError(t, e.eng.Finish(e.Ctx, &engine.Result{Claimed: second[0], Output: queuety.State{"from": "attempt 2"}}))
	assert.Equal(t, "attempt 2", e.State(id).String("from"), "state from the owning attempt")
}

func testMicrosecondDeadlines(t *testing.T, e *Env) {
	e.Clock.Set(Epoch.Add(500 * time.Millisecond))
	id := e.Dispatch("h", nil, queuety.StartToClose(1100*time.Millisecond))
	e.ClaimOne("h")
	assert.Equal(t, Epoch.Add(1600*time.Millisecond), e.Job(id).StartToCloseAt, "deadline keeps microseconds")
	e.Clock.Set(Epoch.Add(1500 * time.Millisecond))
	assert.Equal(t, 0, e.enforce(), "enforced 100 ms early")
	e.Clock.Set(Epoch.Add(1700 * time.Millisecond))
	assert.Equal(t, 1, e.enforce(), "enforced in the same second")
}

func testTimeoutPriority(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.StartToClose(10*time.Second), queuety.HeartbeatTimeout(5*time.Second),
		queuety.ScheduleToClose(20*time.Second), queuety.MaxAttempts(3))
	e.ClaimOne("h")
	e.Clock.Advance(time.Minute) // every deadline has passed
	assert.Equal(t, 1, e.enforce(), "enforced")
	f := e.failures(0, id)
	require.Len(t, f, 1, "failures")
	assert.Equal(t, queuetytype.TimeoutScheduleToClose, f[0].TimeoutKind, "recorded timeout_kind")
	id2 := e.Dispatch("h2", nil, queuety.StartToClose(10*time.Second), queuety.HeartbeatTimeout(5*time.Second), queuety.MaxAttempts(3))
	e.ClaimOne("h2")
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.enforce(), "enforced")
	f = e.failures(0, id2)
	require.Len(t, f, 1, "failures")
	assert.Equal(t, queuetytype.TimeoutHeartbeat, f[0].TimeoutKind, "recorded timeout_kind")
}

// waitDef is a workflow waiting for "approve" with a timeout.
func waitDef(name string) queuety.WorkflowDefinition {
	return queuety.WorkflowDefinition{Name: name, Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signal: "approve", Timeout: time.Hour},
		{Type: queuetytype.StepSingle, Handler: "next"},
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
			assert.NoError(t, sigClient.Signal(context.Background(), id, "approve", queuety.State{"by": "ops"}), "signal")
		}()
		go func() {
			defer wg.Done()
			_, _, err := sweep.FireWaitTimeouts(context.Background(), clientseam.Engine(timerClient), 5)
			assert.NoError(t, err, "timer")
		}()
	}
	wg.Wait()
	for _, id := range ids {
		wf := e.Workflow(id)
		assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "resumed")
		assert.Equal(t, 1, wf.CurrentStep, "step")
		st := e.State(id)
		timedOut, ok := st[queuety.TimedOutKey("approve")].(bool)
		require.Truef(t, ok, "workflow %d: no timed-out marker in %v", id, st)
		_, hasPayload := st["by"]
		assert.NotEqualf(t, timedOut, hasPayload, "workflow %d: the signal payload is present exactly when the signal won (timed_out=%v)", id, timedOut)
		assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "next"}), 1, "next step enqueued once")
		resumed := 0
		for _, ev := range e.events(id) {
			if ev.Event == driver.EventWorkflowResumed {
				resumed++
			}
		}
		assert.Equal(t, 1, resumed, "workflow_resumed events")
		loser := false
		for _, l := range e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogDebug}) {
			loser = loser || strings.Contains(string(l.Context), "signal_ignored") || strings.Contains(string(l.Context), "timer_cancelled")
		}
		assert.Truef(t, loser, "workflow %d: the loser was not recorded", id)
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
	assert.Equal(t, Epoch.Add(time.Hour), wf.WaitDeadlineAt, "wait deadline")
	e.Clock.Advance(59 * time.Minute)
	assert.Equal(t, 0, e.waitTimers(), "timers fired a minute early")
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.waitTimers(), "timers fired when due")
	e.Drain(w)
	assert.Equal(t, any(true), seen.Load(), "next step saw the timed-out marker")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	require.NoError(t, e.C.Signal(e.Ctx, id, "approve", queuety.State{"late": true}))
	assert.NotContains(t, e.State(id), "late", "a late signal changed the state")
}

func testSignalBeatsTimer(t *testing.T, e *Env) {
	id := e.Start(waitDef("approval"), nil)
	w := e.Worker(nil)
	w.HandleStep("next", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	e.Clock.Advance(30 * time.Minute)
	require.NoError(t, e.C.Signal(e.Ctx, id, "approve", queuety.State{"by": "ana"}))
	st := e.State(id)
	assert.Equal(t, any(false), st[queuety.TimedOutKey("approve")], "timed out")
	assert.Equal(t, "ana", st.String("by"), "payload merged")
	assert.Equal(t, time.Time{}, e.Workflow(id).WaitDeadlineAt, "timer cancelled")
	e.Clock.Advance(time.Hour)
	assert.Equal(t, 0, e.waitTimers(), "cancelled timers fired")
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
	assert.Equal(t, int64(1), calls.Load(), "attempts used")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	f := e.failures(id, 0)
	require.Len(t, f, 1, "failures")
	assert.True(t, f[0].NonRetryable, "failure non_retryable")
	assert.Equal(t, 1, f[0].Attempt, "failure attempt")
	assert.Equal(t, driver.FailureApplication, f[0].Category, "failure category")
}

func testPolicySnapshot(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "a", Options: opts(queuety.Retry(4, queuety.BackoffSeconds(7, 11)),
			queuety.StartToClose(90*time.Second), queuety.ScheduleToStart(time.Minute))},
	}}
	id := e.Start(def, nil)
	job := e.OneJob(driver.JobFilter{WorkflowID: id})
	assert.Equal(t, `{"__queuety_runtime":{"max_attempts":4,"backoff":[7,11],"timeout_seconds":90,"schedule_to_start_ms":60000,"start_to_close_ms":90000}}`, string(job.Payload), "payload carries the policy")
	assert.Equal(t, 4, job.MaxAttempts, "max_attempts column")
	// A later deploy changes the definition; the enqueued step keeps its rules.
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
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
	require.NoError(t, err, "change the stored definition")
	claimed := e.ClaimOne("a")
	require.NoError(t, e.eng.Finish(e.Ctx, &engine.Result{Claimed: claimed[0], Err: errors.New("x"), StartedAt: e.Clock.Now()}))
	assert.Equal(t, Epoch.Add(7*time.Second), e.Job(job.ID).AvailableAt, "backoff from the step's own policy")
}

func testHandlerContext(t *testing.T, e *Env) {
	e.Dispatch("inspect", queuety.State{"k": "v"}, queuety.StartToClose(time.Minute), queuety.MaxAttempts(2),
		queuety.WithBackoff(queuety.BackoffSeconds(0)))
	var infos []queuetytype.JobInfo
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
	require.Len(t, infos, 2, "attempts")
	assert.Len(t, deadlines, 2, "ctx deadlines seen")
	assert.Equal(t, infos[1].JobID, infos[0].JobID, "same execution id")
	assert.NotEqual(t, infos[0].AttemptID, infos[1].AttemptID, "attempt ids")
	assert.Equal(t, 2, infos[1].Attempt, "second attempt number")
	assert.Equal(t, 2, infos[1].MaxAttempts, "max attempts")
	for _, d := range deadlines {
		assert.Greater(t, d, 50*time.Second, "ctx deadline, want about 1 minute away")
		assert.LessOrEqual(t, d, time.Minute, "ctx deadline, want about 1 minute away")
	}
	assert.Equal(t, queuetytype.JobCompleted, e.Job(infos[0].JobID).Status, "status")
}

func testHeartbeatThrottle(t *testing.T, e *Env) {
	id := e.Dispatch("crunch", nil, queuety.HeartbeatTimeout(10*time.Second))
	w := e.Worker(nil)
	var results []string
	// read records the stored heartbeat; it runs in the worker's goroutine,
	// so it reports a failed read through assert and the handler's error.
	read := func(ctx context.Context) error {
		j, err := e.C.Job(ctx, id)
		if !assert.NoError(t, err, "read the job from the handler") {
			return err
		}
		results = append(results, string(j.HeartbeatData), j.LastHeartbeatAt.Sub(Epoch).String())
		return nil
	}
	w.HandleJob("crunch", func(ctx context.Context, _ queuety.Payload) error {
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 1}) // sent at once
		e.Clock.Advance(3 * time.Second)
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 2}) // inside the 8 s window: buffered
		if err := read(ctx); err != nil {
			return err
		}
		e.Clock.Advance(6 * time.Second)
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 3}) // window over: sent, replacing n=2
		if err := read(ctx); err != nil {
			return err
		}
		_ = queuety.Heartbeat(ctx, map[string]int{"n": 4}) // buffered; flushed when the handler returns
		return nil
	})
	e.Drain(w)
	assert.Equal(t, `{"n":1} 0s {"n":3} 9s`, strings.Join(results, " "), "results")
	assert.Equal(t, `{"n":4}`, string(e.Job(id).HeartbeatData), "buffered details flushed at the end")
	var raw json.RawMessage = e.Job(id).HeartbeatData
	assert.True(t, json.Valid(raw), "heartbeat_data is not JSON")
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
		if assert.ErrorIs(t, err, queuetytype.ErrInvalidTimeout, what) {
			assert.Contains(t, err.Error(), c.want, what)
		}
	}
	_, err := e.C.Dispatch(e.Ctx, "h", nil, queuety.ScheduleToStart(999*time.Millisecond))
	if assert.ErrorIs(t, err, queuetytype.ErrInvalidTimeout, "schedule-to-start") {
		assert.Contains(t, err.Error(), "schedule-to-start timeout must be at least 1 second", "schedule-to-start")
	}
	wait := queuety.WorkflowDefinition{Name: "wf", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepWaitForSignal, Signal: "s", Timeout: time.Millisecond}}}
	_, err = e.C.DispatchWorkflow(e.Ctx, wait, nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidTimeout, "signal timeout")
}
