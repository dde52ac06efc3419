package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// sweepTasks are the periodic maintenance tasks of a long-running worker.
var sweepTasks = []string{"stale-recovery", "activity-timeouts", "wait-timers", "workflow-waits", "workflow-deadlines", "batch-callbacks", "workflow-callbacks", "workflow-overruns", "machine-timeouts"}

// TestRunSweepsOnTheFakeClock checks that a long-running worker whose
// client has a fake clock runs its sweeps when the clock moves, not on real
// time: moving the clock eleven minutes expires a workflow, times out a
// signal wait, buries a job that waited too long to start and recovers a
// job whose worker died, all at once; and every later move past the
// intervals runs every sweep again.
func TestRunSweepsOnTheFakeClock(t *testing.T) {
	ctx := context.Background()
	c, clock := fakeClockClient(t)

	// A workflow past its one-minute deadline (its step has no handler here).
	late, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "late", ExecutionTimeout: time.Minute,
		Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "unhandled"}}}, nil)
	require.NoError(t, err)
	// A workflow waiting for a signal that never comes, for at most a minute.
	waiting, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "waiting", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signal: "go", Timeout: time.Minute},
		{Type: queuetytype.StepSingle, Handler: "after_wait"},
	}}, nil)
	require.NoError(t, err)
	// A job nobody starts within its 30 s schedule-to-start timeout.
	unstarted, err := c.Dispatch(ctx, "unhandled", nil, queuety.ScheduleToStart(30*time.Second), queuety.MaxAttempts(1))
	require.NoError(t, err)
	// A job claimed by a worker that then died.
	orphan, err := c.Dispatch(ctx, "revive", nil, queuety.WithBackoff(queuety.BackoffSeconds(0)))
	require.NoError(t, err)
	claimed, err := clientseam.Engine(c).Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"revive"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1, "jobs claimed by the dead worker")

	// The retention cleaner has its own test (retention_test.go).
	g := runSwept(t, c, func(w *worker.Worker) {
		w.HandleJob("revive", func(context.Context, queuety.Payload) error { return nil })
		w.HandleStep("after_wait", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	}, worker.NoRetention())
	sweeps, sched := g.sweeps, g.sched

	// Every sweep runs once at start and finds nothing: no time has passed.
	for task, n := range receiveSweeps(t, sweeps) {
		assert.Zero(t, n, "%s at start", task)
	}
	require.Eventually(t, func() bool {
		wf, err := c.Workflow(ctx, waiting)
		return err == nil && wf.Status == queuetytype.WorkflowWaitingForSignal
	}, 10*time.Second, 5*time.Millisecond, "the workflow did not start waiting for its signal")
	waitArmed(t, sched, clock)

	clock.Advance(queuetytype.DefaultStaleTimeout + time.Minute)
	ran := receiveSweeps(t, sweeps)
	assert.Equal(t, 1, ran["workflow-deadlines"], "workflows expired")
	assert.Equal(t, 1, ran["wait-timers"], "signal waits timed out")
	assert.Equal(t, 1, ran["activity-timeouts"], "jobs timed out")
	assert.Equal(t, 1, ran["stale-recovery"], "jobs recovered")

	wf, err := c.Workflow(ctx, late)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "late workflow")
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "late workflow")
	j, err := c.Job(ctx, unstarted)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "job past its schedule-to-start timeout")
	// The timed-out wait lets the workflow go on, and the recovered job
	// runs again, on this worker.
	require.Eventually(t, func() bool {
		wf, err := c.Workflow(ctx, waiting)
		return err == nil && wf.Status == queuetytype.WorkflowCompleted
	}, 10*time.Second, 5*time.Millisecond, "the workflow did not complete after its wait timed out")
	state, err := c.State(ctx, waiting)
	require.NoError(t, err)
	assert.Equal(t, true, state[queuety.TimedOutKey("go")], "state after the wait timed out")
	require.Eventually(t, func() bool {
		j, err := c.Job(ctx, orphan)
		return err == nil && j.Status == queuetytype.JobCompleted
	}, 10*time.Second, 5*time.Millisecond, "the recovered job did not complete")
	j, err = c.Job(ctx, orphan)
	require.NoError(t, err)
	assert.Equal(t, 2, j.Attempts, "attempts of the recovered job")

	// The sweeps keep running each time the clock passes their intervals
	// (at most 66 s with the 10% jitter).
	for range 3 {
		waitArmed(t, sched, clock)
		clock.Advance(66 * time.Second)
		for task, n := range receiveSweeps(t, sweeps) {
			assert.Zero(t, n, "%s after the clock moved on", task)
		}
	}
	g.stop()
	st := g.w.Stats()
	// The wait's own step, the step after it and the recovered job.
	assert.Equal(t, int64(3), st.Succeeded, "attempts that succeeded; stats %+v", st)
	assert.Zero(t, st.Failed, "attempts that failed; stats %+v", st)
}

// receiveSweeps waits until each sweep task has run once and returns how
// many rows each changed. A sweep that fails fails the test.
func receiveSweeps(t *testing.T, sweeps <-chan sweep) map[string]int {
	t.Helper()
	ran := map[string]int{}
	for len(ran) < len(sweepTasks) {
		s := receive(t, sweeps, "a maintenance sweep")
		require.NoError(t, s.err, "sweep %s", s.task)
		require.NotContains(t, ran, s.task, "sweep %s ran twice", s.task)
		ran[s.task] = s.n
	}
	for _, task := range sweepTasks {
		require.Contains(t, ran, task, "sweeps run")
	}
	return ran
}

// waitArmed waits until every sweep of s is due after the clock's current
// time: its gocron timer is set, so moving the clock past it runs it.
func waitArmed(t *testing.T, s gocron.Scheduler, clock *queuety.FakeClock) {
	t.Helper()
	require.Eventually(t, func() bool {
		jobs := s.Jobs()
		if len(jobs) != len(sweepTasks) {
			return false
		}
		for _, j := range jobs {
			next, err := j.NextRun()
			if err != nil || !next.After(clock.Now()) {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the sweeps were not rescheduled")
}
