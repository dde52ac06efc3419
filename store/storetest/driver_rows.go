package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the log, workflow-event and queue-state rows.
func init() {
	registerDriver("Logs/InsertManyAndListFilters", testDriverLogs)
	registerDriver("Events/InsertManyAndListByWorkflow", testDriverEvents)
	registerDriver("Queues/PauseAndResume", testDriverQueueStates)
}

func testDriverLogs(t *testing.T, d *DriverEnv) {
	zero, one, seven := int64(0), int64(1), int64(7)
	attempt, step := 2, 1
	dur, mem := int64(1500), int64(2048)
	entries := []*driver.LogEntry{
		{JobID: &one, Handler: "send", Queue: "mail", Event: driver.LogStarted, Attempt: &attempt, CreatedAt: Epoch},
		{JobID: &one, Handler: "send", Queue: "mail", Event: driver.LogCompleted, Attempt: &attempt, DurationMS: &dur,
			MemoryPeakKB: &mem, Context: []byte(`{"k":"v"}`), CreatedAt: Epoch.Add(time.Second)},
		{JobID: &zero, WorkflowID: 5, Queue: "default", Event: driver.LogWorkflowFailed, ErrorMessage: "Deadline exceeded", CreatedAt: Epoch},
		{JobID: &seven, WorkflowID: 5, StepIndex: &step, Handler: "step", Queue: "default", Event: driver.LogFailed,
			ErrorMessage: "boom", ErrorClass: "error", ErrorTrace: "goroutine 1", CreatedAt: Epoch},
		{WorkflowID: 5, Handler: "wf", Queue: "default", Event: driver.LogWorkflowStarted, CreatedAt: Epoch},
	}
	d.Tx(func(tx driver.Tx) error { return tx.LogInsert(d.Ctx, entries) })
	d.Tx(func(tx driver.Tx) error { return tx.LogInsert(d.Ctx, nil) })
	list := func(f driver.LogFilter) []*driver.LogEntry {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) { return tx.LogList(d.Ctx, f) })
	}
	events := func(logs []*driver.LogEntry) []driver.LogEvent {
		out := make([]driver.LogEvent, len(logs))
		for i, l := range logs {
			out[i] = l.Event
		}
		return out
	}
	all := list(driver.LogFilter{})
	require.Len(t, all, 5, "log rows")
	for i := 1; i < len(all); i++ {
		assert.Greater(t, all[i].ID, all[i-1].ID, "log rows oldest first")
	}
	assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogCompleted, driver.LogWorkflowFailed, driver.LogFailed,
		driver.LogWorkflowStarted}, events(all), "every log row, in insert order")
	assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogCompleted}, events(list(driver.LogFilter{JobID: 1})), "job 1")
	assert.Equal(t, []driver.LogEvent{driver.LogWorkflowFailed, driver.LogFailed, driver.LogWorkflowStarted},
		events(list(driver.LogFilter{WorkflowID: 5})), "workflow 5")
	assert.Equal(t, []driver.LogEvent{driver.LogFailed}, events(list(driver.LogFilter{WorkflowID: 5, Event: driver.LogFailed})),
		"failed rows of workflow 5")
	assert.Equal(t, []driver.LogEvent{driver.LogCompleted}, events(list(driver.LogFilter{Event: driver.LogCompleted})), "completed rows")
	assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogCompleted}, events(list(driver.LogFilter{Limit: 2})), "limit")

	done := all[1]
	if assert.NotNil(t, done.JobID, "job_id") {
		assert.Equal(t, int64(1), *done.JobID, "job_id")
	}
	assert.Equal(t, "send", done.Handler, "handler")
	assert.Equal(t, "mail", done.Queue, "queue")
	if assert.NotNil(t, done.Attempt, "attempt") {
		assert.Equal(t, 2, *done.Attempt, "attempt")
	}
	if assert.NotNil(t, done.DurationMS, "duration_ms") {
		assert.Equal(t, int64(1500), *done.DurationMS, "duration_ms")
	}
	if assert.NotNil(t, done.MemoryPeakKB, "memory_peak_kb") {
		assert.Equal(t, int64(2048), *done.MemoryPeakKB, "memory_peak_kb")
	}
	assert.JSONEq(t, `{"k":"v"}`, string(done.Context), "context")
	assert.Equal(t, Epoch.Add(time.Second), done.CreatedAt, "created_at")
	// A job id of 0 is a value Queuety writes, distinct from NULL.
	if assert.NotNil(t, all[2].JobID, "job_id 0") {
		assert.Equal(t, int64(0), *all[2].JobID, "job_id 0")
	}
	assert.Nil(t, all[4].JobID, "job_id NULL")
	failed := all[3]
	if assert.NotNil(t, failed.StepIndex, "step_index") {
		assert.Equal(t, 1, *failed.StepIndex, "step_index")
	}
	assert.Equal(t, "boom", failed.ErrorMessage, "error_message")
	assert.Equal(t, "error", failed.ErrorClass, "error_class")
	assert.Equal(t, "goroutine 1", failed.ErrorTrace, "error_trace")
	assert.Nil(t, failed.Attempt, "attempt NULL")
	assert.Nil(t, failed.Context, "context NULL")
}

func testDriverEvents(t *testing.T, d *DriverEnv) {
	attempt := 1
	dur := int64(12)
	ev := func(wf int64, step int, e driver.EventType) *driver.WorkflowEvent {
		return &driver.WorkflowEvent{WorkflowID: wf, StepIndex: step, Handler: "h", Event: e, CreatedAt: Epoch}
	}
	full := &driver.WorkflowEvent{WorkflowID: 3, JobID: 30, StepIndex: 1, StepName: "reserve", StepType: "single", Handler: "reserve",
		Event: driver.EventStepCompleted, Queue: "default", Attempt: &attempt, Input: []byte(`{"a":1}`), Output: []byte(`{"b":2}`),
		StateBefore: []byte(`{"a":1}`), StateAfter: []byte(`{"a":1,"b":2}`), Context: []byte(`{"c":3}`), Error: []byte(`{"message":"x"}`),
		DurationMS: &dur, CreatedAt: Epoch.Add(time.Second)}
	d.Tx(func(tx driver.Tx) error {
		return tx.EventInsert(d.Ctx, []*driver.WorkflowEvent{ev(3, 0, driver.EventStepStarted), ev(4, 0, driver.EventStepStarted),
			full, ev(3, 2, driver.EventWorkflowWaiting)})
	})
	d.Tx(func(tx driver.Tx) error { return tx.EventInsert(d.Ctx, nil) })
	got := inTx(d, func(tx driver.Tx) ([]*driver.WorkflowEvent, error) { return tx.EventList(d.Ctx, 3) })
	require.Len(t, got, 3, "events of workflow 3")
	assert.Equal(t, driver.EventStepStarted, got[0].Event, "first event")
	assert.Equal(t, driver.EventStepCompleted, got[1].Event, "second event")
	assert.Equal(t, driver.EventWorkflowWaiting, got[2].Event, "third event")
	assert.Less(t, got[0].ID, got[1].ID, "events in id order")
	assert.Less(t, got[1].ID, got[2].ID, "events in id order")
	e := got[1]
	assert.Equal(t, int64(3), e.WorkflowID, "workflow_id")
	assert.Equal(t, int64(30), e.JobID, "job_id")
	assert.Equal(t, 1, e.StepIndex, "step_index")
	assert.Equal(t, "reserve", e.StepName, "step_name")
	assert.Equal(t, "single", e.StepType, "step_type")
	assert.Equal(t, "reserve", e.Handler, "handler")
	assert.Equal(t, "default", e.Queue, "queue")
	if assert.NotNil(t, e.Attempt, "attempt") {
		assert.Equal(t, 1, *e.Attempt, "attempt")
	}
	assert.Equal(t, `{"a":1}`, string(e.Input), "input")
	assert.Equal(t, `{"b":2}`, string(e.Output), "output")
	assert.Equal(t, `{"a":1}`, string(e.StateBefore), "state_before")
	assert.Equal(t, `{"a":1,"b":2}`, string(e.StateAfter), "state_after")
	assert.JSONEq(t, `{"c":3}`, string(e.Context), "context")
	assert.JSONEq(t, `{"message":"x"}`, string(e.Error), "error")
	if assert.NotNil(t, e.DurationMS, "duration_ms") {
		assert.Equal(t, int64(12), *e.DurationMS, "duration_ms")
	}
	assert.Equal(t, Epoch.Add(time.Second), e.CreatedAt, "created_at")
	assert.Zero(t, got[0].JobID, "job_id NULL")
	assert.Nil(t, got[0].Attempt, "attempt NULL")
	assert.Nil(t, got[0].Output, "output NULL")
	assert.Empty(t, inTx(d, func(tx driver.Tx) ([]*driver.WorkflowEvent, error) { return tx.EventList(d.Ctx, 99) }),
		"events of a workflow without any")
}

func testDriverQueueStates(t *testing.T, d *DriverEnv) {
	states := func() []driver.QueueState {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]driver.QueueState, error) { return tx.QueueStates(d.Ctx) })
	}
	assert.Empty(t, states(), "queue states of a new database")
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "reports", true, Epoch) })
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "mail", true, Epoch) })
	assert.ElementsMatch(t, []driver.QueueState{{Queue: "reports", Paused: true, PausedAt: Epoch}, {Queue: "mail", Paused: true, PausedAt: Epoch}},
		states(), "paused queues")
	// Pausing again keeps one row and records the new time.
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "reports", true, Epoch.Add(time.Minute)) })
	assert.ElementsMatch(t, []driver.QueueState{{Queue: "reports", Paused: true, PausedAt: Epoch.Add(time.Minute)},
		{Queue: "mail", Paused: true, PausedAt: Epoch}}, states(), "queue states after pausing reports again")
	// Resuming deletes the row, as Queuety does; resuming a running queue
	// is not an error.
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "reports", false, Epoch) })
	d.Tx(func(tx driver.Tx) error { return tx.QueueSetPaused(d.Ctx, "never-paused", false, Epoch) })
	assert.Equal(t, []driver.QueueState{{Queue: "mail", Paused: true, PausedAt: Epoch}}, states(), "queue states after resuming reports")
}
