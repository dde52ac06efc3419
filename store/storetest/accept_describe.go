package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func init() {
	register("Describe/StepStatusSurvivesJobPurge", testStepStatusAfterPurge)
	register("Describe/TimelineWithinASecondIsInOrder", testTimelineOrder)
}

// stepStatuses lists a description's step statuses by index.
func stepStatuses(d *queuetytype.WorkflowDescription) []string {
	out := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		out[i] = s.Status
	}
	return out
}

// testStepStatusAfterPurge: a step's status comes from what the workflow
// did (its events), not from its job rows: after the completed jobs are
// purged, a completed workflow's steps are still completed, and the step a
// _next_step jump passed over is still the only skipped one.
func testStepStatusAfterPurge(t *testing.T, e *Env) {
	b := builder.Workflow("purged").Then("classify").Then("escalate").Then("reply", builder.Name("reply")).
		Parallel("left", "right").ForEach("items", "each").WaitForSignal("go").Then("finish")
	id := e.startB(b, queuety.State{"items": []any{1, 2, 3}})
	w := e.Worker(nil)
	w.HandleStep("classify", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"_next_step": "reply"}, nil
	})
	for _, h := range []string{"escalate", "reply", "left", "right", "finish"} {
		w.HandleStep(h, func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{h: true}, nil })
	}
	w.HandleForEach("each", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		return queuety.State{"seen": item}, nil
	})
	e.Drain(w)
	require.NoError(t, e.C.Signal(e.Ctx, id, "go", nil))
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status: %s", e.Workflow(id).ErrorMessage)
	want := []string{"completed", "skipped", "completed", "completed", "completed", "completed", "completed"}
	require.Equal(t, want, stepStatuses(e.describe(id)), "step statuses before the purge")

	e.Clock.Advance(time.Hour)
	n, err := e.C.PurgeCompleted(e.Ctx, time.Minute)
	require.NoError(t, err)
	require.Positive(t, n, "jobs purged")
	d := e.describe(id)
	assert.Equal(t, want, stepStatuses(d), "step statuses after the purge")
	for _, s := range d.Steps {
		assert.Empty(t, s.Jobs, "step %d still lists jobs", s.Index)
	}
	// The events say which steps ran whatever page of them is read.
	page, err := e.C.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineLimit: 1})
	require.NoError(t, err)
	require.Len(t, page.Timeline, 1)
	assert.Equal(t, want, stepStatuses(page), "step statuses after the purge, with a timeline page of one entry")
}

// testTimelineOrder: a workflow whose steps all run within one second (the
// stored times have whole seconds) lists each step's step_started before
// its completion rows, step 0's rows before step 1's, and
// workflow_completed last.
func testTimelineOrder(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("quick").Then("a").Then("b"), nil)
	w := e.Worker(nil)
	for _, h := range []string{"a", "b"} {
		w.HandleStep(h, func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{h: true}, nil })
	}
	e.Drain(w)
	d := e.describe(id)
	var got []string
	for _, te := range d.Timeline {
		s := te.Source + ":" + te.Event
		if te.StepIndex != nil {
			s += fmt.Sprintf("@%d", *te.StepIndex)
		}
		got = append(got, s)
	}
	at := func(s string) int {
		for i, g := range got {
			if g == s {
				return i
			}
		}
		t.Errorf("timeline has no %s: %v", s, got)
		return -1
	}
	assert.Equal(t, "log:workflow_started", got[0], "first entry: %v", got)
	assert.Equal(t, "log:workflow_completed", got[len(got)-1], "last entry: %v", got)
	for _, step := range []int{0, 1} {
		started := at(fmt.Sprintf("event:step_started@%d", step))
		for _, end := range []string{"log:completed", "event:step_completed"} {
			assert.Less(t, started, at(fmt.Sprintf("%s@%d", end, step)), "step %d: step_started before %s: %v", step, end, got)
		}
		assert.Less(t, at(fmt.Sprintf("log:started@%d", step)), at(fmt.Sprintf("log:completed@%d", step)), "step %d: started before completed: %v", step, got)
	}
	assert.Less(t, at("event:step_completed@0"), at("event:step_started@1"), "step 0 ends before step 1 starts: %v", got)
	assert.Less(t, at("log:completed@0"), at("log:started@1"), "step 0 ends before step 1 starts: %v", got)
}
