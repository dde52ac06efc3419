package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the bounded history reads, and of inserts of more
// rows than one statement may carry.
func init() {
	registerDriver("Jobs/InsertPastStatementLimits", testDriverJobInsertThousands)
	registerDriver("Events/InsertPastStatementLimits", testDriverEventInsertThousands)
	registerDriver("Events/PageFiltersOrdersAndLeavesOutLargeColumns", testDriverEventPage)
	registerDriver("Logs/CountByTimeAndJobIDs", testDriverLogCountByTime)
	registerDriver("Jobs/ListByStepAndStepCounts", testDriverJobListByStep)
}

// testDriverJobInsertThousands: one JobInsert of 1,500 jobs (a for-each
// step's branches) writes them all, ids in order: more placeholders than
// SQLite takes in one statement (32,766). The jobnote.Note of its context
// counts each job once, and hears each depends_on once.
func testDriverJobInsertThousands(t *testing.T, d *DriverEnv) {
	const n = 1500
	jobs := make([]*driver.Job, n)
	for i := range jobs {
		jobs[i] = newJob("default", "bulk")
		jobs[i].Payload = []byte(fmt.Sprintf(`{"i":%d}`, i))
		if i%2 == 0 {
			jobs[i].DependsOn = int64(i + 1)
		}
	}
	ctx, note := jobnote.With(d.Ctx)
	depends := 0
	note.OnDependsOn(func(int64) { depends++ })
	d.Tx(func(tx driver.Tx) error { return tx.JobInsert(ctx, jobs) })
	counts, _ := note.Take()
	assert.Equal(t, map[jobnote.Key]int{{Queue: "default", Handler: "bulk"}: n}, counts, "each job noted once")
	assert.Equal(t, n/2, depends, "each depends_on heard once")
	ids := make([]int64, n)
	for i, j := range jobs {
		ids[i] = j.ID
	}
	for i := 1; i < n; i++ {
		require.Greaterf(t, ids[i], ids[i-1], "id of row %d after row %d", i, i-1)
	}
	got := inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobGetMany(d.Ctx, ids, driver.LockNone) })
	require.Len(t, got, n, "rows read back")
	for i, j := range got {
		require.Equalf(t, fmt.Sprintf(`{"i":%d}`, i), string(j.Payload), "payload of the row with id %d", j.ID)
	}
}

// testDriverEventInsertThousands: one EventInsert of 2,000 events writes
// them all, in order.
func testDriverEventInsertThousands(t *testing.T, d *DriverEnv) {
	const n = 2000
	events := make([]*driver.WorkflowEvent, n)
	for i := range events {
		events[i] = &driver.WorkflowEvent{WorkflowID: 8, StepIndex: i % 100, Handler: "h", Event: driver.EventStepStarted,
			Input: []byte(fmt.Sprintf(`{"i":%d}`, i)), CreatedAt: Epoch}
	}
	d.Tx(func(tx driver.Tx) error { return tx.EventInsert(d.Ctx, events) })
	got := inTx(d, func(tx driver.Tx) ([]*driver.WorkflowEvent, error) { return tx.EventList(d.Ctx, 8) })
	require.Len(t, got, n, "events read back")
	for i, e := range got {
		require.Equalf(t, fmt.Sprintf(`{"i":%d}`, i), string(e.Input), "event %d in insert order", i)
	}
}

func testDriverEventPage(t *testing.T, d *DriverEnv) {
	big := `{"s":"` + strings.Repeat("x", 2000) + `"}`
	ev := func(step int, e driver.EventType, at time.Duration) *driver.WorkflowEvent {
		return &driver.WorkflowEvent{WorkflowID: 3, StepIndex: step, Handler: "h", Event: e, CreatedAt: Epoch.Add(at),
			Input: []byte(`{"in":1}`), Context: []byte(`{"c":1}`)}
	}
	done := ev(0, driver.EventStepCompleted, 2*time.Second)
	done.StateBefore, done.StateAfter, done.Output = []byte(big), []byte(`{"a":1}`), []byte(`{"o":1}`)
	failed := ev(1, driver.EventStepFailed, time.Second) // inserted after, created before
	failed.Error = []byte(`{"message":"boom"}`)
	resumed := ev(0, driver.EventWorkflowResumed, 3*time.Second) // no state_after
	d.Tx(func(tx driver.Tx) error {
		return tx.EventInsert(d.Ctx, []*driver.WorkflowEvent{ev(0, driver.EventStepStarted, 0), done, failed, resumed,
			{WorkflowID: 4, Handler: "other", Event: driver.EventStepStarted, CreatedAt: Epoch}})
	})
	page := func(q driver.EventQuery) []*driver.WorkflowEvent {
		t.Helper()
		q.WorkflowID = 3
		return inTx(d, func(tx driver.Tx) ([]*driver.WorkflowEvent, error) { return tx.EventPage(d.Ctx, q) })
	}
	kinds := func(evs []*driver.WorkflowEvent) []driver.EventType {
		out := make([]driver.EventType, len(evs))
		for i, e := range evs {
			out[i] = e.Event
		}
		return out
	}
	all := page(driver.EventQuery{})
	require.Len(t, all, 4, "events of workflow 3")
	assert.Equal(t, []driver.EventType{driver.EventStepStarted, driver.EventStepCompleted, driver.EventStepFailed, driver.EventWorkflowResumed},
		kinds(all), "id order")
	assert.Equal(t, big, string(all[1].StateBefore), "state_before read whole")
	assert.Nil(t, all[1].Omitted, "nothing left out")
	assert.Equal(t, []driver.EventType{driver.EventStepStarted, driver.EventStepFailed, driver.EventStepCompleted, driver.EventWorkflowResumed},
		kinds(page(driver.EventQuery{Order: driver.EventsByTime})), "time order")
	assert.Equal(t, []driver.EventType{driver.EventWorkflowResumed, driver.EventStepFailed},
		kinds(page(driver.EventQuery{Order: driver.EventsNewestFirst, Limit: 2})), "newest first, limit")
	assert.Equal(t, []driver.EventType{driver.EventStepCompleted, driver.EventStepFailed},
		kinds(page(driver.EventQuery{Offset: 1, Limit: 2})), "offset and limit")
	assert.Equal(t, []driver.EventType{driver.EventStepFailed, driver.EventWorkflowResumed},
		kinds(page(driver.EventQuery{Offset: 2})), "offset without a limit")
	assert.Equal(t, []driver.EventType{driver.EventStepFailed}, kinds(page(driver.EventQuery{IDs: []int64{all[2].ID, 999999}})), "ids")
	zero := 0
	assert.Equal(t, []driver.EventType{driver.EventStepCompleted},
		kinds(page(driver.EventQuery{StepIndex: &zero, Events: []driver.EventType{driver.EventStepCompleted, driver.EventWorkflowResumed},
			WithStateAfter: true})), "step, event types, with a state_after")

	capped := page(driver.EventQuery{IDs: []int64{all[1].ID}, MaxColumnBytes: 100})
	require.Len(t, capped, 1)
	assert.Nil(t, capped[0].StateBefore, "state_before over the cap left out")
	assert.Equal(t, map[string]int64{"state_before": int64(len(big))}, capped[0].Omitted, "its length")
	assert.Equal(t, `{"a":1}`, string(capped[0].StateAfter), "state_after under the cap")
	assert.Equal(t, `{"in":1}`, string(capped[0].Input), "input under the cap")

	light := page(driver.EventQuery{Light: true})
	require.Len(t, light, 4)
	for _, e := range light {
		assert.Nil(t, e.Input, "light: no input")
		assert.Nil(t, e.StateBefore, "light: no state_before")
		assert.Nil(t, e.Context, "light: no context")
	}
	assert.Equal(t, map[string]int64{"input": 8, "output": 7, "state_before": int64(len(big)), "state_after": 7, "context": 7},
		light[1].Omitted, "light: the lengths of the columns left out, none for NULL ones")
	assert.JSONEq(t, `{"message":"boom"}`, string(light[2].Error), "light: error still read")
	assert.Equal(t, Epoch.Add(time.Second), light[2].CreatedAt, "created_at")

	steps := inTx(d, func(tx driver.Tx) ([]int, error) { return tx.EventSteps(d.Ctx, 3) })
	assert.Equal(t, []int{0, 1}, steps, "EventSteps")
	assert.Empty(t, inTx(d, func(tx driver.Tx) ([]int, error) { return tx.EventSteps(d.Ctx, 99) }), "EventSteps of a workflow without events")
	n := inTx(d, func(tx driver.Tx) (int64, error) { return tx.EventCount(d.Ctx, 3) })
	assert.Equal(t, int64(4), n, "EventCount")
	n = inTx(d, func(tx driver.Tx) (int64, error) { return tx.EventCount(d.Ctx, 99) })
	assert.Zero(t, n, "EventCount of a workflow without events")
}

func testDriverLogCountByTime(t *testing.T, d *DriverEnv) {
	one, two := int64(1), int64(2)
	d.Tx(func(tx driver.Tx) error {
		return tx.LogInsert(d.Ctx, []*driver.LogEntry{
			{JobID: &one, WorkflowID: 5, Handler: "a", Queue: "default", Event: driver.LogCompleted, CreatedAt: Epoch.Add(time.Second)},
			{JobID: &one, WorkflowID: 5, Handler: "a", Queue: "default", Event: driver.LogStarted, CreatedAt: Epoch},
			{JobID: &two, WorkflowID: 5, Handler: "b", Queue: "default", Event: driver.LogStarted, CreatedAt: Epoch.Add(2 * time.Second)},
			{WorkflowID: 6, Handler: "c", Queue: "default", Event: driver.LogStarted, CreatedAt: Epoch},
		})
	})
	list := func(f driver.LogFilter) []string {
		t.Helper()
		logs := inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) { return tx.LogList(d.Ctx, f) })
		out := make([]string, len(logs))
		for i, l := range logs {
			out[i] = l.Handler + ":" + string(l.Event)
		}
		return out
	}
	assert.Equal(t, []string{"a:started", "a:completed", "b:started"}, list(driver.LogFilter{WorkflowID: 5, ByTime: true}), "time order")
	assert.Equal(t, []string{"a:started", "a:completed"}, list(driver.LogFilter{WorkflowID: 5, ByTime: true, Limit: 2}), "time order, limit")
	assert.Equal(t, []string{"a:completed", "a:started", "b:started"}, list(driver.LogFilter{JobIDs: []int64{1, 2}}), "jobs 1 and 2, id order")
	assert.Equal(t, []string{"b:started"}, list(driver.LogFilter{JobIDs: []int64{2, 9}}), "job 2")
	count := func(f driver.LogFilter) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.LogCount(d.Ctx, f) })
	}
	assert.Equal(t, int64(3), count(driver.LogFilter{WorkflowID: 5, Limit: 1}), "LogCount ignores the limit")
	assert.Equal(t, int64(4), count(driver.LogFilter{}), "LogCount of every row")
	assert.Equal(t, int64(2), count(driver.LogFilter{JobIDs: []int64{1}}), "LogCount of job 1")
	assert.Equal(t, int64(1), count(driver.LogFilter{WorkflowID: 5, Event: driver.LogCompleted}), "LogCount by event")

	long := strings.Repeat("m", 300)
	d.Tx(func(tx driver.Tx) error {
		return tx.LogInsert(d.Ctx, []*driver.LogEntry{
			{WorkflowID: 9, Handler: "big", Queue: "default", Event: driver.LogFailed, ErrorMessage: long, ErrorTrace: long,
				Context: []byte(`{"k":"` + long + `"}`), CreatedAt: Epoch},
			{WorkflowID: 9, Handler: "small", Queue: "default", Event: driver.LogFailed, ErrorMessage: "short", Context: []byte(`{"k":1}`), CreatedAt: Epoch},
		})
	})
	capped := inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) {
		return tx.LogList(d.Ctx, driver.LogFilter{WorkflowID: 9, MaxTextBytes: 100})
	})
	require.Len(t, capped, 2)
	assert.Equal(t, long[:100], capped[0].ErrorMessage, "error_message cut")
	assert.Equal(t, long[:100], capped[0].ErrorTrace, "error_trace cut")
	assert.Nil(t, capped[0].Context, "a long context left out")
	assert.Equal(t, "short", capped[1].ErrorMessage, "a short error_message")
	assert.JSONEq(t, `{"k":1}`, string(capped[1].Context), "a short context")
	whole := inTx(d, func(tx driver.Tx) ([]*driver.LogEntry, error) {
		return tx.LogList(d.Ctx, driver.LogFilter{WorkflowID: 9})
	})
	assert.Equal(t, long, whole[0].ErrorMessage, "error_message read whole without MaxTextBytes")
}

func testDriverJobListByStep(t *testing.T, d *DriverEnv) {
	step := func(i int) *int { return &i }
	job := func(s *int, status driver.JobStatus, payload string) *driver.Job {
		j := newJob("default", "h")
		j.WorkflowID, j.StepIndex, j.Status, j.Payload = 7, s, status, []byte(payload)
		return j
	}
	big := `{"s":"` + strings.Repeat("y", 500) + `"}`
	ids := d.insertJobs(
		job(step(0), driver.JobCompleted, `{"a":0}`),  // 0
		job(step(0), driver.JobBuried, `{"a":1}`),     // 1
		job(step(0), driver.JobCompleted, `{"a":2}`),  // 2
		job(step(0), driver.JobCompleted, big),        // 3
		job(step(1), driver.JobPending, `{"b":0}`),    // 4
		job(nil, driver.JobPending, `{"none":0}`),     // 5
		job(step(1), driver.JobProcessing, `{"b":1}`), // 6
	)
	d.updateJob(ids[3], func(j *driver.Job) { j.HeartbeatData = []byte(`{"hb":1}`) })
	other := newJob("default", "h")
	other.WorkflowID, other.StepIndex = 8, step(0)
	d.insertJobs(other)
	list := func(q driver.JobStepQuery) []*driver.Job {
		t.Helper()
		q.WorkflowID = 7
		return inTx(d, func(tx driver.Tx) ([]*driver.Job, error) { return tx.JobListByStep(d.Ctx, q) })
	}
	idsOf := func(jobs []*driver.Job) []int64 {
		out := make([]int64, len(jobs))
		for i, j := range jobs {
			out[i] = j.ID
		}
		return out
	}
	all := list(driver.JobStepQuery{})
	assert.Equal(t, ids, idsOf(all), "every job of the workflow, in id order")
	assert.Equal(t, big, string(all[3].Payload), "payload read whole")
	assert.Equal(t, `{"hb":1}`, string(all[3].HeartbeatData), "heartbeat data")
	assert.Equal(t, driver.JobBuried, all[1].Status, "status")

	// Two a step: the one not completed first, then the newest.
	assert.Equal(t, []int64{ids[1], ids[3], ids[4], ids[5], ids[6]}, idsOf(list(driver.JobStepQuery{PerStep: 2})), "two a step")
	assert.Equal(t, []int64{ids[1], ids[5], ids[6]}, idsOf(list(driver.JobStepQuery{PerStep: 1})), "one a step")

	capped := list(driver.JobStepQuery{MaxPayloadBytes: 100})
	assert.Nil(t, capped[3].Payload, "payload over the cap left out")
	assert.Equal(t, int64(len(big)), capped[3].OmittedPayloadBytes, "its length")
	assert.Equal(t, `{"a":2}`, string(capped[2].Payload), "payload under the cap")
	assert.Zero(t, capped[2].OmittedPayloadBytes, "nothing left out")
	none := list(driver.JobStepQuery{MaxPayloadBytes: -1, PerStep: 10})
	require.Len(t, none, 7)
	for _, j := range none {
		assert.Nil(t, j.Payload, "no payloads")
		assert.Nil(t, j.HeartbeatData, "no heartbeat data")
	}
	assert.Equal(t, driver.JobProcessing, none[6].Status, "status read")

	counts := inTx(d, func(tx driver.Tx) ([]driver.JobStepCount, error) { return tx.JobStepCounts(d.Ctx, 7) })
	assert.ElementsMatch(t, []driver.JobStepCount{
		{StepIndex: -1, Status: driver.JobPending, Count: 1},
		{StepIndex: 0, Status: driver.JobBuried, Count: 1},
		{StepIndex: 0, Status: driver.JobCompleted, Count: 3},
		{StepIndex: 1, Status: driver.JobPending, Count: 1},
		{StepIndex: 1, Status: driver.JobProcessing, Count: 1},
	}, counts, "JobStepCounts")
}
