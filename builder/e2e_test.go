package builder_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// deadlineCalls records the calls of a deadline callback.
type deadlineCalls struct {
	mu     sync.Mutex
	states []queuety.State
}

func (d *deadlineCalls) handle(_ context.Context, s queuety.State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.states = append(d.states, s)
	return nil
}

func (d *deadlineCalls) get() []queuety.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]queuety.State(nil), d.states...)
}

func runOnce(t *testing.T, w *worker.Worker) worker.Stats {
	t.Helper()
	st, err := w.RunOnce(context.Background(), 30*time.Second)
	require.NoError(t, err, "RunOnce")
	return st
}

func TestEndToEndStateFlowsThroughSteps(t *testing.T) {
	c := openClient(t)
	ctx := context.Background()

	var calls deadlineCalls
	w := worker.New(c, worker.Concurrency(4))
	w.HandleStep("fetch_data", func(_ context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"rows": []any{"a", "b", "c"}, "fetched_from": s.String("source")}, nil
	})
	w.HandleStep("transform_data", func(_ context.Context, s queuety.State) (queuety.State, error) {
		rows, _ := s["rows"].([]any)
		out := make([]any, len(rows))
		for i, r := range rows {
			out[i] = strings.ToUpper(r.(string))
		}
		return queuety.State{"rows": out, "transformed": true}, nil
	})
	w.HandleStep("load_data", func(_ context.Context, s queuety.State) (queuety.State, error) {
		rows, _ := s["rows"].([]any)
		return queuety.State{"loaded": len(rows), "saw_transformed": s.Bool("transformed")}, nil
	})
	w.HandleDeadline("import_timeout", calls.handle)

	id, err := builder.Workflow("data_import").
		Then("fetch_data").
		Then("transform_data", builder.StartToClose(5*time.Minute), builder.Retry(3)).
		Then("load_data").
		MustCompleteWithin(0, 24, 0, 0).
		OnDeadline("import_timeout").
		Dispatch(ctx, c, queuety.State{"source": "https://example.com/export.csv"})
	require.NoError(t, err)
	st := runOnce(t, w)
	assert.Equal(t, int64(3), st.Succeeded, "succeeded; stats %+v", st)
	assert.Equal(t, int64(0), st.Failed, "failed; stats %+v", st)

	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow status (error %q)", wf.ErrorMessage)
	require.Equal(t, 3, wf.CurrentStep, "workflow current step")
	state, err := c.State(ctx, id)
	require.NoError(t, err)
	want := queuety.State{
		"source":          "https://example.com/export.csv",
		"rows":            []any{"A", "B", "C"},
		"fetched_from":    "https://example.com/export.csv",
		"transformed":     true,
		"loaded":          int64(3),
		"saw_transformed": true,
	}
	assert.Equal(t, want, state, "final state")
	assert.Empty(t, calls.get(), "deadline handler calls")
}

func TestEndToEndDeadlineExceeded(t *testing.T) {
	clock := queuety.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	c := openClient(t, queuety.WithClock(clock))
	ctx := context.Background()

	var calls deadlineCalls
	var loadRan atomic.Int32
	w := worker.New(c)
	w.HandleStep("slow_fetch", func(_ context.Context, s queuety.State) (queuety.State, error) {
		// The fetch takes two minutes of workflow time: past the deadline.
		clock.Advance(2 * time.Minute)
		return queuety.State{"fetched": true}, nil
	})
	w.HandleStep("load_data", func(context.Context, queuety.State) (queuety.State, error) {
		loadRan.Add(1)
		return nil, nil
	})
	w.HandleDeadline("import_timeout", calls.handle)

	type importState struct {
		Source string `json:"source"`
		Batch  int    `json:"batch"`
	}
	id, err := builder.Workflow("slow_import").
		Then("slow_fetch").
		Then("load_data").
		MustCompleteWithin(0, 0, 1, 0).
		OnDeadline("import_timeout").
		Dispatch(ctx, c, importState{Source: "s3://bucket/export.csv", Batch: 7})
	require.NoError(t, err)
	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, time.Minute, wf.DeadlineAt.Sub(clock.Now()), "deadline_at after dispatch")

	runOnce(t, w)
	runOnce(t, w)

	wf, err = c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "workflow status (error %q)", wf.ErrorMessage)
	assert.Equal(t, "Deadline exceeded", wf.ErrorMessage, "workflow error")
	assert.Equal(t, 0, wf.CurrentStep, "current_step (the late result must not advance the workflow)")
	got := calls.get()
	require.Len(t, got, 1, "deadline handler calls")
	want := queuety.State{"source": "s3://bucket/export.csv", "batch": int64(7)}
	assert.Equal(t, want, got[0], "deadline handler state")
	for k := range got[0] {
		assert.False(t, strings.HasPrefix(k, "_"), "deadline handler saw private key %q", k)
	}
	assert.Zero(t, loadRan.Load(), "load_data runs after the deadline")
	jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
	require.NoError(t, err)
	for _, j := range jobs {
		assert.NotEqual(t, "load_data", j.Handler, "load_data was enqueued (job %d, %s) after the deadline", j.ID, j.Status)
	}
	logs, err := c.Logs(ctx, driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowDeadlineExceeded})
	require.NoError(t, err)
	assert.Len(t, logs, 1, "workflow_deadline_exceeded log rows")
}
