package queuetytest_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytest"
	"github.com/queuety/queuety-go/queuetytype"
)

func TestKitsAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := queuetytest.New(t), queuetytest.New(t)
	_, err := a.Client().Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	queuetytest.RequireDispatched(t, a, "ping")
	queuetytest.RequireNothingDispatched(t, b)

	a.Advance(time.Hour)
	assert.Equal(t, queuetytest.Epoch.Add(time.Hour), a.Now())
	assert.Equal(t, queuetytest.Epoch, b.Now(), "each kit has its own clock")
	start := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	assert.Equal(t, start, queuetytest.New(t, queuetytest.StartAt(start)).Clock().Now())
}

func TestWorkRunsEveryQueueInClaimOrder(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	var ran []string
	kit.HandleJob("record", func(ctx context.Context, p queuety.Payload) error {
		ran = append(ran, p.String("name"))
		if p.String("name") == "first" { // a job that dispatches a job, on another queue
			_, err := kit.Client().Dispatch(ctx, "record", queuety.State{"name": "follow-up"}, queuety.OnQueue("later"))
			return err
		}
		return nil
	})
	for _, d := range []struct {
		name string
		opts []queuety.JobOption
	}{
		{"low", nil},
		{"first", []queuety.JobOption{queuety.WithPriority(queuetytype.PriorityUrgent)}},
		{"mail", []queuety.JobOption{queuety.OnQueue("mail")}},
	} {
		_, err := kit.Client().Dispatch(ctx, "record", queuety.State{"name": d.name}, d.opts...)
		require.NoError(t, err)
	}

	st := kit.Work(ctx)
	// Queues are worked in name order; within one, by priority, then age.
	// A queue that gets its first job during a pass is worked in the next.
	assert.Equal(t, []string{"first", "low", "mail", "follow-up"}, ran)
	assert.Equal(t, int64(4), st.Succeeded)
	assert.Equal(t, int64(0), kit.Work(ctx).Claimed, "nothing is left")
	queuetytest.RequireDispatched(t, kit, "record", queuetytest.Queue("later"), queuetytest.Status(queuetytype.JobCompleted))
}

func TestRunWorkflowStopsOnRetryAndUnregisteredHandlers(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	calls := 0
	kit.HandleStep("flaky", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("upstream timed out")
		}
		return queuety.State{"ok": true}, nil
	})
	id, err := builder.Workflow("w").
		Then("flaky", builder.Retry(3, queuety.BackoffSeconds(30))).
		Then("missing").
		Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)

	run := kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopRetry, run.Stop, run.String())
	assert.Equal(t, "upstream timed out", run.Error)
	assert.Equal(t, kit.Now().Add(30*time.Second), run.Until)
	assert.Equal(t, "0", run.Step)

	kit.Advance(30 * time.Second)
	run = kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopHandler, run.Stop, run.String())
	assert.Equal(t, "missing", run.Handler)
	assert.Equal(t, `workflow 1 waiting_for_handler at step 1 (no handler "missing" registered)`, run.String())
	assert.Equal(t, queuety.State{"ok": true}, kit.WorkflowState(id))

	kit.HandleStep("missing", step(queuety.State{"done": true}))
	assert.Equal(t, queuetytest.StopCompleted, kit.RunWorkflow(ctx, id).Stop)
	assert.Equal(t, []string{
		"step_started 0", "step_failed 0", "step_started 0", "step_completed 0", "step_started 1", "step_completed 1",
	}, names(kit.Events(id)))
	logs := names(kit.Logs(id))
	assert.Equal(t, "workflow_started", logs[0])
	assert.Equal(t, "workflow_completed", logs[len(logs)-1])
}

// TestEventsAndLogsReadTheWholeHistory: Events and Logs return a history
// longer than a description's page of timeline entries.
func TestEventsAndLogsReadTheWholeHistory(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t, queuetytest.WorkTimeout(2*time.Minute))
	kit.HandleForEach("each", func(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil })
	items := make([]any, 150)
	for i := range items {
		items[i] = i
	}
	id, err := builder.Workflow("wide").ForEach("items", "each").Dispatch(ctx, kit.Client(), queuety.State{"items": items})
	require.NoError(t, err)
	require.Equal(t, queuetytest.StopCompleted, kit.RunWorkflow(ctx, id).Stop)
	events := names(kit.Events(id))
	require.Len(t, events, 1+2*len(items)+1, "the placeholder's step_started, two events a branch, step_completed")
	assert.Equal(t, "step_completed 0", events[len(events)-1], "the last event")
	logs := names(kit.Logs(id))
	assert.Greater(t, len(logs)+len(events), queuetytype.DefaultTimelineEntries, "a history longer than a page")
	assert.Equal(t, "workflow_completed", logs[len(logs)-1], "the last log row")
}

func TestRunWorkflowStopsOnFailurePauseAndCancel(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	kit.HandleStep("broken", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, queuety.NonRetryable(errors.New("bad input"))
	})
	kit.HandleStep("ok", step(nil))
	cancelled := 0
	kit.HandleDeadline("cleanup", func(context.Context, queuety.State) error { cancelled++; return nil })

	failing, err := builder.Workflow("w").Then("broken").Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)
	run := kit.RunWorkflow(ctx, failing)
	assert.Equal(t, queuetytest.StopFailed, run.Stop)
	assert.Contains(t, run.Error, "bad input")
	kit.RequireWorkflowStatus(t, failing, queuetytype.WorkflowFailed)

	paused, err := builder.Workflow("p").Sleep(time.Minute).Then("ok").OnCancel("cleanup").Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)
	require.NoError(t, kit.Client().PauseWorkflow(ctx, paused))
	kit.Advance(time.Minute)
	assert.Equal(t, queuetytest.StopPaused, kit.RunWorkflow(ctx, paused).Stop)
	require.NoError(t, kit.Client().CancelWorkflow(ctx, paused))
	assert.Equal(t, queuetytest.StopCancelled, kit.RunWorkflow(ctx, paused).Stop)
	assert.Equal(t, 1, cancelled, "OnCancel ran once")

	msg := requireFails(t, func(tb testing.TB) { kit.RequireWorkflowStatus(tb, failing, queuetytype.WorkflowCompleted) },
		"workflow 1 is failed, want completed: workflow 1 failed at step 0: ")
	assert.Contains(t, msg, "bad input")
	requireFails(t, func(tb testing.TB) { kit.RequireWorkflowStatus(tb, 99, queuetytype.WorkflowCompleted) },
		"queuetytest: RequireWorkflowStatus:")
}

func TestRunWorkflowSignalTimeoutAndChildren(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	kit.HandleStep("child_step", step(queuety.State{"child_done": true}))
	child := builder.Workflow("child").WaitForSignal("child_go").Then("child_step")
	id, err := builder.Workflow("parent").
		WaitForSignal("go", builder.Timeout(10*time.Minute)).
		RunWorkflow("run_child", child).
		Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)

	run := kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopSignal, run.Stop)
	assert.Equal(t, []string{"go"}, run.Signals)
	assert.Equal(t, kit.Now().Add(10*time.Minute), run.Until)

	kit.Advance(10 * time.Minute)
	run = kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopWorkflows, run.Stop, run.String())
	assert.Equal(t, true, run.State[queuety.TimedOutKey("go")])
	require.Len(t, run.Workflows, 1)
	childID := run.Workflows[0]
	assert.Equal(t, queuetytest.StopSignal, kit.Inspect(childID).Stop)

	require.NoError(t, kit.Client().Signal(ctx, childID, "child_go", nil))
	run = kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopCompleted, run.Stop, run.String())
	assert.Equal(t, true, run.State["child_done"])
	queuetytest.RequireWorkflowDispatched(t, kit, "run_child", queuetytest.Status(queuetytype.WorkflowCompleted))
}

func TestWorkFailsWhenWorkNeverRunsOut(t *testing.T) {
	ctx := context.Background()
	rec := newRecorder(t)
	kit := queuetytest.New(rec, queuetytest.WorkTimeout(200*time.Millisecond))
	kit.HandleStep("spin", step(queuety.State{"again": true}))
	_, err := builder.Workflow("loop").
		Then("spin", builder.Name("spin")).
		RepeatWhile("spin", builder.StateIs("again", true)).
		Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)

	kit.Work(ctx)
	assert.Contains(t, rec.message(t), "queuetytest: Work: jobs were still due after 200ms (a workflow that loops without end?)")
}

func TestRunStep(t *testing.T) {
	ctx := context.Background()
	type input struct {
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	state, err := queuetytest.RunStep(ctx, t, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		assert.IsType(t, int64(0), s["count"], "numbers arrive as they come from JSON")
		assert.Equal(t, []any{"a"}, s["tags"])
		info, ok := queuety.JobInfoFrom(ctx)
		require.True(t, ok)
		assert.Equal(t, 1, info.MaxAttempts)
		require.NoError(t, queuety.Heartbeat(ctx, map[string]int{"done": 1}))
		return queuety.State{"count": 2, "_private": 1}, nil
	}, input{Count: 1, Tags: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"count": int64(2), "tags": []any{"a"}}, state)

	boom := errors.New("boom")
	_, err = queuetytest.RunStep(ctx, t, func(context.Context, queuety.State) (queuety.State, error) { return nil, boom }, nil)
	assert.Same(t, boom, err, "the handler's own error")

	_, err = queuetytest.RunStep(ctx, t, func(context.Context, queuety.State) (queuety.State, error) {
		return nil, queuety.ContinueAsNew(queuety.State{"cursor": 2})
	}, nil)
	var can *queuetytype.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	assert.Equal(t, map[string]any{"cursor": 2}, can.State)

	_, err = queuetytest.RunStep(ctx, t, step(queuety.State{"_next_step": "nowhere"}), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queuetytest: RunStep: the step's workflow stopped: workflow 1 failed")
}

// names returns the String of each event.
func names(events []queuetytest.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.String()
	}
	return out
}

func TestOptionsReachTheClient(t *testing.T) {
	ctx := context.Background()
	var logs strings.Builder
	kit := queuetytest.New(t,
		queuetytest.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		queuetytest.ClientOptions(queuety.WithDefaultBackoff(queuety.BackoffSeconds(5))))
	kit.HandleStep("fails", func(context.Context, queuety.State) (queuety.State, error) { return nil, errors.New("nope") })
	id, err := builder.Workflow("w").Then("fails").Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)

	run := kit.RunWorkflow(ctx, id)
	assert.Equal(t, queuetytest.StopRetry, run.Stop)
	assert.Equal(t, kit.Now().Add(5*time.Second), run.Until, "the client's default backoff")
	assert.Contains(t, logs.String(), "job attempt failed")
}

func TestRunWorkflowWaitsForOtherWorkflows(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	first, err := builder.Workflow("first").WaitForSignal("go").Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)
	second, err := builder.Workflow("second").WaitForWorkflow(first).Dispatch(ctx, kit.Client(), nil)
	require.NoError(t, err)

	run := kit.RunWorkflow(ctx, second)
	assert.Equal(t, queuetytest.StopWorkflows, run.Stop)
	assert.Equal(t, []int64{first}, run.Workflows)
	require.NoError(t, kit.Client().Signal(ctx, first, "go", nil))
	assert.Equal(t, queuetytest.StopCompleted, kit.RunWorkflow(ctx, second).Stop)
}
