package builder_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
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
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	st := runOnce(t, w)
	if st.Succeeded != 3 || st.Failed != 0 {
		t.Errorf("stats = %+v; want 3 succeeded, 0 failed", st)
	}

	wf, err := c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if wf.Status != queuety.WorkflowCompleted || wf.CurrentStep != 3 {
		t.Fatalf("workflow status %s at step %d; want completed at 3 (error %q)", wf.Status, wf.CurrentStep, wf.ErrorMessage)
	}
	state, err := c.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := queuety.State{
		"source":          "https://example.com/export.csv",
		"rows":            []any{"A", "B", "C"},
		"fetched_from":    "https://example.com/export.csv",
		"transformed":     true,
		"loaded":          int64(3),
		"saw_transformed": true,
	}
	if !reflect.DeepEqual(state, want) {
		t.Errorf("final state = %#v\nwant %#v", state, want)
	}
	if n := len(calls.get()); n != 0 {
		t.Errorf("deadline handler called %d times; want 0", n)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	wf, err := c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := wf.DeadlineAt.Sub(clock.Now()); got != time.Minute {
		t.Fatalf("deadline_at is %s after dispatch; want 1m", got)
	}

	runOnce(t, w)
	runOnce(t, w)

	wf, err = c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if wf.Status != queuety.WorkflowFailed || wf.ErrorMessage != "Deadline exceeded" {
		t.Fatalf("workflow status %s, error %q; want failed, %q", wf.Status, wf.ErrorMessage, "Deadline exceeded")
	}
	if wf.CurrentStep != 0 {
		t.Errorf("current_step = %d; want 0 (the late result must not advance the workflow)", wf.CurrentStep)
	}
	got := calls.get()
	if len(got) != 1 {
		t.Fatalf("deadline handler called %d times; want once", len(got))
	}
	want := queuety.State{"source": "s3://bucket/export.csv", "batch": int64(7)}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("deadline handler state = %#v; want %#v", got[0], want)
	}
	for k := range got[0] {
		if strings.HasPrefix(k, "_") {
			t.Errorf("deadline handler saw private key %q", k)
		}
	}
	if n := loadRan.Load(); n != 0 {
		t.Errorf("load_data ran %d times after the deadline; want 0", n)
	}
	jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Handler == "load_data" {
			t.Errorf("load_data was enqueued (job %d, %s) after the deadline", j.ID, j.Status)
		}
	}
	logs, err := c.Logs(ctx, driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowDeadlineExceeded})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 {
		t.Errorf("%d workflow_deadline_exceeded log rows; want 1", len(logs))
	}
}
