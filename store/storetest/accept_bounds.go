package storetest

// The size bounds of a workflow's history: a for-each step's branch
// events grow with the item count, not with its square, and reading a
// workflow's history (describe, timeline, trace) reads a bounded page.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("ForEach/HistoryGrowsLinearly", testForEachHistoryLinear)
}

// wideForEach runs a workflow "wide": a for_each over n items (each about
// 20 bytes of JSON) whose branches return their index, then a last step,
// to completion, and returns its id.
func (e *Env) wideForEach(n int, concurrency int) int64 {
	e.T.Helper()
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%05d-abcdefgh", i)
	}
	id := e.startB(builder.Workflow("wide").ForEach("items", "wide_item", builder.ResultKey("out")).Then("wide_done"),
		queuety.State{"items": items})
	w := e.Worker(nil, worker.Concurrency(concurrency))
	w.HandleForEach("wide_item", func(_ context.Context, _ queuety.State, _ any, index int) (queuety.State, error) {
		return queuety.State{"n": int64(index)}, nil
	})
	w.HandleStep("wide_done", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"done": true}, nil
	})
	e.drainUntil([]*worker.Worker{w}, []*queuety.Client{e.C}, func(c *queuety.Client) bool {
		wf, err := c.Workflow(context.Background(), id)
		return err == nil && terminal(wf.Status)
	})
	wf := e.Workflow(id)
	require.Equalf(e.T, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	return id
}

// eventBytes counts a workflow's events of one handler other than
// step_completed ("" for all events) and the bytes of their JSON columns,
// as stored.
func (e *Env) eventBytes(id int64, handler string) (events, bytes int64) {
	e.T.Helper()
	q := "SELECT COUNT(*), COALESCE(SUM(COALESCE(LENGTH(input), 0) + COALESCE(LENGTH(output), 0) + COALESCE(LENGTH(state_before), 0) + " +
		"COALESCE(LENGTH(state_after), 0) + COALESCE(LENGTH(context), 0) + COALESCE(LENGTH(artifacts), 0) + COALESCE(LENGTH(error), 0)), 0) FROM " +
		e.table("workflow_events") + " WHERE workflow_id = ?"
	args := []any{id}
	if handler != "" {
		q += " AND handler = ? AND event <> 'step_completed'"
		args = append(args, handler)
	}
	require.NoError(e.T, e.C.DB().QueryRowContext(e.Ctx, q, args...).Scan(&events, &bytes), "event bytes")
	return events, bytes
}

// testForEachHistoryLinear: a for-each over 2,000 items. Each branch's
// events hold its item and output, not the state (which holds the whole
// item list), so the branch events take a few hundred bytes per item and
// the workflow's events grow linearly; the trace and the description of
// the workflow stay under a cap.
func testForEachHistoryLinear(t *testing.T, e *Env) {
	const n = 2000
	id := e.wideForEach(n, 16)

	// Per branch: a step_started and a step_item_completed event, each
	// with the item and index as input and context, and the output.
	branchEvents, branchBytes := e.eventBytes(id, "wide_item")
	assert.Equal(t, int64(2*n), branchEvents, "branch events")
	const perBranch = 512
	assert.LessOrEqualf(t, branchBytes, int64(n*perBranch), "bytes of the branch events: %d per branch", branchBytes/n)

	// The step-level events record the state a few times (the
	// placeholder's step_started, the settling step_completed, the last
	// step's events): linear in the state's size.
	state, err := json.Marshal(e.State(id))
	require.NoError(t, err)
	_, all := e.eventBytes(id, "")
	assert.LessOrEqualf(t, all, branchBytes+int64(10*len(state)), "bytes of all events (the final state has %d)", len(state))

	// StateAt still reads the for-each step's state after it.
	after, err := e.C.StateAt(e.Ctx, id, 0)
	require.NoError(t, err)
	agg := asMap(t, after["out"], "aggregate after step 0")
	assert.Equal(t, int64(n), agg["succeeded"], "succeeded")
	assert.Len(t, asList(t, after["items"], "items"), n, "items after step 0")

	// Reading the history is bounded.
	trace, err := e.C.TraceWorkflow(e.Ctx, id)
	require.NoError(t, err)
	assert.LessOrEqualf(t, len(trace), 4<<20, "trace bundle: %d bytes", len(trace))
	desc, err := json.Marshal(e.describe(id))
	require.NoError(t, err)
	assert.LessOrEqualf(t, len(desc), 1<<20, "description: %d bytes", len(desc))
	t.Logf("%d items: branch events %d bytes (%d per branch), all events %d bytes, final state %d bytes, trace %d bytes, description %d bytes",
		n, branchBytes, branchBytes/n, all, len(state), len(trace), len(desc))
}

func init() {
	register("ForEach/DefaultItemCap", testForEachDefaultItemCap)
	register("History/TracePages", testTracePages)
	register("History/TraceLeavesOutLargeValues", testTraceLargeValues)
	register("History/DescribePagesTimelineAndJobs", testDescribePages)
	register("History/ForEachStateAtRewindForkReplay", testForEachHistoryTools)
}

// testForEachDefaultItemCap: without a MaxForEachItems budget a for-each
// step may expand into DefaultMaxForEachItems items; more fail the
// workflow with a message naming the cap and the way to raise it. A
// client's WithMaxForEachItems moves the cap (negative: none), and a
// workflow's own budget replaces it, above or below.
func testForEachDefaultItemCap(t *testing.T, e *Env) {
	items := func(n int) queuety.State {
		l := make([]any, n)
		for i := range l {
			l[i] = i
		}
		return queuety.State{"items": l}
	}
	run := func(c *queuety.Client, b *builder.Builder, n int) *driver.Workflow {
		t.Helper()
		id, err := b.Dispatch(e.Ctx, c, items(n))
		require.NoError(t, err)
		w := e.Worker(c)
		w.HandleForEach("capped_item", func(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil })
		e.Drain(w)
		wf, err := c.Workflow(e.Ctx, id)
		require.NoError(t, err)
		return wf
	}
	plain := builder.Workflow("capped").ForEach("items", "capped_item")

	wf := run(e.C, plain, queuetytype.DefaultMaxForEachItems+1)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "over the default cap")
	assert.Contains(t, wf.ErrorMessage, fmt.Sprintf("planned %d items, exceeding the default cap of %d for-each items", queuetytype.DefaultMaxForEachItems+1,
		queuetytype.DefaultMaxForEachItems), "error")
	assert.Contains(t, wf.ErrorMessage, "MaxForEachItems", "the error names the way to raise it")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: wf.ID, Handler: "capped_item"}), "no branch dispatched")

	three := e.Client(queuety.WithMaxForEachItems(3))
	assert.Equal(t, queuetytype.WorkflowCompleted, run(three, plain, 3).Status, "at the cap")
	wf = run(three, plain, 4)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "over a client's cap")
	assert.Contains(t, wf.ErrorMessage, "exceeding the default cap of 3 for-each items", "error")
	assert.Equal(t, queuetytype.WorkflowCompleted, run(three, builder.Workflow("budgeted").MaxForEachItems(5).ForEach("items", "capped_item"), 5).Status,
		"a workflow's budget above the cap")
	wf = run(e.C, builder.Workflow("budgeted").MaxForEachItems(2).ForEach("items", "capped_item"), 3)
	assert.Contains(t, wf.ErrorMessage, "exceeding max_for_each_items budget of 2", "a workflow's budget below the cap")
	none := e.Client(queuety.WithMaxForEachItems(-1))
	assert.Equal(t, queuetytype.WorkflowCompleted, run(none, plain, 5).Status, "no cap")
}

// traceDoc decodes a trace bundle.
func (e *Env) traceDoc(id int64, opts queuetytype.TraceOptions) map[string]any {
	e.T.Helper()
	b, err := e.C.TraceWorkflowWith(e.Ctx, id, opts)
	require.NoError(e.T, err, "trace workflow %d", id)
	var doc map[string]any
	require.NoError(e.T, json.Unmarshal(b, &doc), "trace JSON")
	return doc
}

// eventIDs are the ids of a trace's events.
func eventIDs(t *testing.T, doc map[string]any) []float64 {
	t.Helper()
	var out []float64
	for _, ev := range asList(t, doc["events"], "events") {
		out = append(out, asMap(t, ev, "event")["id"].(float64))
	}
	return out
}

// testTracePages: a trace holds one page of the events; its "page" object
// counts what it left out, and the pages read with next_offset hold every
// event once, in order.
func testTracePages(t *testing.T, e *Env) {
	const n = 300
	id := e.wideForEach(n, 8)
	events, _ := e.eventBytes(id, "")
	var all []float64
	for _, ev := range e.events(id) {
		all = append(all, float64(ev.ID))
	}
	require.Len(t, all, int(events))

	first := e.traceDoc(id, queuetytype.TraceOptions{Limit: 250})
	page := asMap(t, first["page"], "page")
	assert.Equal(t, float64(events), page["events_total"], "events_total")
	assert.Equal(t, float64(0), page["events_offset"], "events_offset")
	assert.Equal(t, float64(250), page["events_shown"], "events_shown")
	assert.Equal(t, float64(events-250), page["events_more"], "events_more")
	assert.Equal(t, float64(250), page["next_offset"], "next_offset")
	assert.Len(t, asList(t, first["events"], "events"), 250, "events")
	var got []float64
	for doc := first; ; {
		got = append(got, eventIDs(t, doc)...)
		next := asMap(t, doc["page"], "page")["next_offset"]
		if next == nil {
			break
		}
		doc = e.traceDoc(id, queuetytype.TraceOptions{Limit: 250, Offset: int(next.(float64))})
	}
	assert.Equal(t, all, got, "the pages hold every event once, in order")

	// Jobs: TraceJobsPerStep of the for-each step (placeholder and
	// branches), the last step's one.
	assert.Equal(t, float64(n+2), page["jobs_total"], "jobs_total")
	assert.Equal(t, float64(queuetytype.TraceJobsPerStep+1), page["jobs_shown"], "jobs_shown")
	assert.Len(t, asList(t, first["jobs"], "jobs"), queuetytype.TraceJobsPerStep+1, "jobs")
	logs := len(e.Logs(driver.LogFilter{WorkflowID: id, Limit: 100000}))
	assert.Equal(t, float64(logs), page["logs_total"], "logs_total")
	assert.Equal(t, float64(min(logs, queuetytype.TraceLogs)), page["logs_shown"], "logs_shown")
	assert.Len(t, asList(t, first["logs"], "logs"), min(logs, queuetytype.TraceLogs), "logs")

	// The steps group the page's events.
	steps := asList(t, first["steps"], "steps")
	require.NotEmpty(t, steps)
	assert.Len(t, asList(t, asMap(t, steps[0], "step 0")["events"], "step 0 events"), 250, "step 0's events on the first page")

	// The default page, and a limit over the maximum.
	assert.Equal(t, float64(queuetytype.DefaultTraceEvents), asMap(t, e.traceDoc(id, queuetytype.TraceOptions{})["page"], "page")["events_shown"],
		"default page")
	last := e.traceDoc(id, queuetytype.TraceOptions{Offset: int(events) - 3, Limit: queuetytype.MaxTraceEvents + 1})
	assert.Equal(t, all[len(all)-3:], eventIDs(t, last), "the last three")
	assert.Nil(t, asMap(t, last["page"], "page")["next_offset"], "no next page")
	assert.Empty(t, eventIDs(t, e.traceDoc(id, queuetytype.TraceOptions{Offset: int(events) + 5})), "past the end")
}

// testTraceLargeValues: a JSON value over TraceValueBytes is left out of a
// trace, with its length; and a page ends before its events' JSON passes
// TraceEventBytes.
func testTraceLargeValues(t *testing.T, e *Env) {
	blob := strings.Repeat("z", queuetytype.TraceValueBytes+10)
	b := builder.Workflow("heavy")
	for range 2 {
		b = b.Then("heavy_step")
	}
	id := e.startB(b, queuety.State{"blob": blob})
	w := e.Worker(nil)
	w.HandleStep("heavy_step", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"ok": true}, nil })
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)
	doc := e.traceDoc(id, queuetytype.TraceOptions{})
	evs := asList(t, doc["events"], "events")
	require.Len(t, evs, 4, "events")
	done := asMap(t, evs[1], "step_completed")
	assert.Equal(t, "step_completed", done["event"])
	assert.Nil(t, done["state_before"], "state_before left out")
	assert.Nil(t, done["state_after"], "state_after left out")
	assert.Equal(t, map[string]any{"ok": true}, done["output"], "output kept")
	omitted := asMap(t, done["omitted"], "omitted")
	stateLen := float64(len(`{"blob":""}`) + len(blob))
	assert.Equal(t, stateLen, omitted["state_before"], "state_before's length")
	assert.Equal(t, stateLen+float64(len(`,"ok":true`)), omitted["state_after"], "state_after's length")
	assert.NotContains(t, omitted, "output", "output not left out")
	trace, err := e.C.TraceWorkflow(e.Ctx, id)
	require.NoError(t, err)
	assert.Less(t, len(trace), 4*queuetytype.TraceValueBytes, "trace bytes: the workflow's state and no event state")

	// Values just under the cap: each step's two events carry five copies
	// of the state, so the fourth step's first event would take the page
	// past TraceEventBytes.
	blob = strings.Repeat("z", queuetytype.TraceValueBytes-100)
	b = builder.Workflow("heavier")
	for range 4 {
		b = b.Then("heavy_step")
	}
	id = e.startB(b, queuety.State{"blob": blob})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)
	doc = e.traceDoc(id, queuetytype.TraceOptions{})
	page := asMap(t, doc["page"], "page")
	assert.Equal(t, float64(8), page["events_total"], "events_total")
	assert.Equal(t, float64(6), page["events_shown"], "events_shown: the page ends before its JSON passes TraceEventBytes")
	assert.Equal(t, float64(6), page["next_offset"], "next_offset")
	for _, ev := range asList(t, doc["events"], "events") {
		assert.NotContains(t, asMap(t, ev, "event"), "omitted", "nothing left out")
	}
	assert.Len(t, eventIDs(t, e.traceDoc(id, queuetytype.TraceOptions{Offset: 6})), 2, "the next page")
}

// testDescribePages: a description holds one page of the timeline and up
// to JobsPerStep jobs of each step, and counts the rest; the pages read
// one after another make up the whole timeline, in order.
func testDescribePages(t *testing.T, e *Env) {
	const n = 150
	id := e.wideForEach(n, 8)
	events, _ := e.eventBytes(id, "")
	logs := len(e.Logs(driver.LogFilter{WorkflowID: id, Limit: 100000}))
	total := int(events) + logs
	require.Greater(t, total, queuetytype.DefaultTimelineEntries, "a history longer than a page")

	d := e.describe(id)
	assert.Len(t, d.Timeline, queuetytype.DefaultTimelineEntries, "default page")
	assert.Equal(t, total, d.TimelineTotal, "timeline_total")
	assert.Equal(t, total-queuetytype.DefaultTimelineEntries, d.TimelineMore, "timeline_more")
	require.Len(t, d.Steps, 2)
	assert.Len(t, d.Steps[0].Jobs, min(n+1, queuetytype.DefaultJobsPerStep), "jobs listed of the for-each step")
	assert.Equal(t, n+1-queuetytype.DefaultJobsPerStep, d.Steps[0].JobsMore, "jobs_more")
	assert.Equal(t, "completed", d.Steps[0].Status, "step status from the counts")
	assert.Len(t, d.Steps[1].Jobs, 1, "the last step's job")
	assert.Zero(t, d.Steps[1].JobsMore)
	for _, j := range d.Steps[0].Jobs {
		assert.NotEmpty(t, j.History, "job %d history", j.ID)
	}

	whole, err := e.C.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineLimit: total, JobsPerStep: n + 1})
	require.NoError(t, err)
	require.Len(t, whole.Timeline, total, "the whole timeline")
	assert.Zero(t, whole.TimelineMore)
	assert.Len(t, whole.Steps[0].Jobs, n+1, "every job")
	assert.Zero(t, whole.Steps[0].JobsMore)
	var paged []engine.TimelineEntry
	for off := 0; off < total; off += 70 {
		p, err := e.C.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineOffset: off, TimelineLimit: 70, JobsPerStep: 1})
		require.NoError(t, err)
		assert.Equal(t, max(total-off-70, 0), p.TimelineMore, "timeline_more at offset %d", off)
		paged = append(paged, p.Timeline...)
	}
	assert.Equal(t, whole.Timeline, paged, "pages of 70 make up the whole timeline, in order")
}

// testForEachHistoryTools: with branch events that carry no state, the
// time-travel tools still work across a for-each step: StateAt reads the
// step's state after it, a rewind to it runs the next step again, a fork
// runs on, and an export replays with the branch events as they are.
func testForEachHistoryTools(t *testing.T, e *Env) {
	b := builder.Workflow("travel").Then("travel_a").ForEach("items", "travel_item", builder.ResultKey("r")).Then("travel_c")
	id := e.startB(b, queuety.State{"items": []any{"x", "y", "z"}})
	var cs atomic.Int64
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleStep("travel_a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": true}, nil })
	w.HandleForEach("travel_item", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		return queuety.State{"v": item}, nil
	})
	w.HandleStep("travel_c", func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"c": cs.Add(1)}, nil
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)

	for _, ev := range e.events(id) {
		if ev.Handler == "travel_item" && ev.Event != driver.EventStepCompleted {
			assert.Nilf(t, ev.StateBefore, "%s event %d: no state_before", ev.Event, ev.ID)
			assert.Nilf(t, ev.StateAfter, "%s event %d: no state_after", ev.Event, ev.ID)
			assert.NotContainsf(t, string(ev.Input), `"state"`, "%s event %d input", ev.Event, ev.ID)
			assert.Containsf(t, string(ev.Input), `"item_index"`, "%s event %d input", ev.Event, ev.ID)
		}
	}
	st, err := e.C.StateAt(e.Ctx, id, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(3), asMap(t, st["r"], "aggregate")["succeeded"], "state after the for-each step")
	assert.NotContains(t, st, "c", "before the last step")

	require.NoError(t, e.C.RewindWorkflow(e.Ctx, id, 1))
	assert.Equal(t, st, e.State(id), "the state after the for-each step came back")
	fork, err := e.C.ForkWorkflow(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, st, e.State(fork), "fork's state")
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "completed again")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(fork).Status, "the fork completed")
	assert.ElementsMatch(t, []any{int64(2), int64(3)}, []any{e.State(id)["c"], e.State(fork)["c"]}, "the last step ran again, in both")

	doc, err := e.C.ExportWorkflow(e.Ctx, id)
	require.NoError(t, err)
	replay, err := e.C.ReplayWorkflow(e.Ctx, doc)
	require.NoError(t, err)
	src, dst := e.events(id), e.events(replay)
	require.Len(t, dst, len(src)+1, "the source's events and workflow_replayed")
	for i, ev := range src {
		assert.Equal(t, ev.Event, dst[i].Event, "event %d", i)
		assert.Equal(t, string(ev.StateBefore), string(dst[i].StateBefore), "event %d state_before", i)
		assert.Equal(t, string(ev.StateAfter), string(dst[i].StateAfter), "event %d state_after", i)
	}
	rst, err := e.C.StateAt(e.Ctx, replay, 1)
	require.NoError(t, err)
	assert.Equal(t, st, rst, "the replay's state after the for-each step")
}

func init() {
	register("History/DescribeAndTraceBoundSignalsFailuresArtifacts", testHistoryLists)
}

// fillHistoryLists gives a workflow, in one transaction, signals
// failures and artifacts: n signals (the ones at bigSignals with
// payloads of the given sizes), n failures (three fifths application,
// three tenths timeout, a tenth cancelled; every seventh with a message
// longer than a description shows) and artifacts named a-00000 on (those
// at bigArtifacts with contents of the given sizes).
func (e *Env) fillHistoryLists(id int64, n int, bigSignals map[int]int, artifacts int, bigArtifacts map[int]int) {
	e.T.Helper()
	long := strings.Repeat("m", queuetytype.DescribeTextChars+500)
	blob := func(size int) []byte { return []byte(`{"b":"` + strings.Repeat("s", size-8) + `"}`) }
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		for i := range n {
			payload := []byte(fmt.Sprintf(`{"i":%d}`, i))
			if size, ok := bigSignals[i]; ok {
				payload = blob(size)
			}
			if err := tx.SignalInsert(e.Ctx, &driver.Signal{WorkflowID: id, Name: fmt.Sprintf("sig-%05d", i), Payload: payload,
				ReceivedAt: e.Clock.Now()}); err != nil {
				return err
			}
			f := &driver.Failure{WorkflowID: id, Attempt: i + 1, Category: driver.FailureApplication, Message: fmt.Sprintf("fail-%05d", i),
				CreatedAt: e.Clock.Now()}
			switch i % 10 {
			case 6, 7, 8:
				f.Category, f.TimeoutKind = driver.FailureTimeout, driver.TimeoutStartToClose
			case 9:
				f.Category = driver.FailureCancelled
			}
			if i%7 == 0 {
				f.Message += long
			}
			if err := tx.FailureInsert(e.Ctx, f); err != nil {
				return err
			}
		}
		for i := range artifacts {
			content := []byte(fmt.Sprintf(`{"i":%d}`, i))
			if size, ok := bigArtifacts[i]; ok {
				content = blob(size)
			}
			if err := tx.ArtifactPut(e.Ctx, &driver.Artifact{WorkflowID: id, Key: fmt.Sprintf("a-%05d", i), Kind: "json", Content: content,
				Metadata: []byte(`{"m":1}`), CreatedAt: e.Clock.Now(), UpdatedAt: e.Clock.Now()}); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(e.T, err, "fill the workflow's signals, failures and artifacts")
}

// testHistoryLists: a workflow with 5,000 signals, 5,000 failures and
// 700 artifacts, some of them large. Its description lists the newest
// DescribeFailures failures and DescribeSignals signals and counts them
// all (by category too, from a grouped count), with long messages cut and
// large payloads left out; its trace lists the newest TraceSignals
// signals and the first TraceArtifacts artifacts, leaves out the values
// over TraceValueBytes and those past TraceSignalBytes and
// TraceArtifactBytes, with their lengths, and counts them all. Neither
// grows with the lists.
func testHistoryLists(t *testing.T, e *Env) {
	const n, artifacts = 5000, 700
	const near = 900 << 10 // under TraceValueBytes; five of them pass the budgets
	id := e.startB(builder.Workflow("noisy").Then("noisy_step"), nil)
	// The signals the trace lists are the newest 1,000: five near the
	// cap, one over it; two older large ones are not read at all.
	bigSignals := map[int]int{10: 2 << 20, 20: near, n - 900: near, n - 700: near, n - 500: near, n - 300: near, n - 100: near,
		n - 50: queuetytype.TraceValueBytes + 10, n - 1: 9 << 10}
	bigArtifacts := map[int]int{3: near, 5: near, 7: near, 9: near, 11: near, 13: queuetytype.TraceValueBytes + 10, artifacts - 1: 2 << 20}
	e.fillHistoryLists(id, n, bigSignals, artifacts, bigArtifacts)

	d := e.describe(id)
	assert.Equal(t, n, d.FailuresTotal, "failures_total")
	assert.Equal(t, n-queuetytype.DescribeFailures, d.FailuresMore, "failures_more")
	assert.Equal(t, map[driver.FailureCategory]int{driver.FailureApplication: 3000, driver.FailureTimeout: 1500, driver.FailureCancelled: 500},
		d.FailureCounts, "failure counts by category, of every failure")
	require.Len(t, d.Failures, queuetytype.DescribeFailures, "failures listed")
	assert.Equal(t, fmt.Sprintf("fail-%05d", n-1), d.Failures[len(d.Failures)-1].Message, "the newest failure last")
	assert.Equal(t, n-queuetytype.DescribeFailures+1, d.Failures[0].Attempt, "the oldest failure listed")
	cut := 0
	for _, f := range d.Failures {
		if (f.Attempt-1)%7 == 0 {
			assert.True(t, f.MessageCut, "failure %d: a long message is cut", f.Attempt)
			assert.Equal(t, queuetytype.DescribeTextChars, len(f.Message), "failure %d: cut at DescribeTextChars", f.Attempt)
			cut++
		} else {
			assert.False(t, f.MessageCut, "failure %d", f.Attempt)
		}
	}
	assert.Positive(t, cut, "long messages among the listed")

	assert.Equal(t, n, d.SignalsTotal, "signals_total")
	assert.Equal(t, n-queuetytype.DescribeSignals, d.SignalsMore, "signals_more")
	require.Len(t, d.Signals, queuetytype.DescribeSignals, "signals listed")
	assert.Equal(t, fmt.Sprintf("sig-%05d", n-queuetytype.DescribeSignals), d.Signals[0].Name, "the oldest signal listed")
	last := d.Signals[len(d.Signals)-1]
	assert.Equal(t, fmt.Sprintf("sig-%05d", n-1), last.Name, "the newest signal last")
	assert.Nil(t, last.Payload, "a payload over DescribePayloadBytes is left out")
	assert.Equal(t, int64(9<<10), last.PayloadOmittedBytes, "its length")
	assert.JSONEq(t, fmt.Sprintf(`{"i":%d}`, n-2), string(d.Signals[len(d.Signals)-2].Payload), "a small payload")
	doc, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Less(t, len(doc), 1<<20, "the description's JSON: %d bytes", len(doc))

	trace, err := e.C.TraceWorkflow(e.Ctx, id)
	require.NoError(t, err)
	assert.Less(t, len(trace), queuetytype.TraceSignalBytes+queuetytype.TraceArtifactBytes+(1<<20), "the trace's JSON: %d bytes", len(trace))
	var tr map[string]any
	require.NoError(t, json.Unmarshal(trace, &tr))
	page := asMap(t, tr["page"], "page")
	assert.Equal(t, float64(n), page["signals_total"], "signals_total")
	assert.Equal(t, float64(queuetytype.TraceSignals), page["signals_shown"], "signals_shown")
	assert.Equal(t, float64(artifacts), page["artifacts_total"], "artifacts_total")
	assert.Equal(t, float64(queuetytype.TraceArtifacts), page["artifacts_shown"], "artifacts_shown")

	sigs := asList(t, tr["signals"], "signals")
	require.Len(t, sigs, queuetytype.TraceSignals, "signals in the trace")
	assert.Equal(t, fmt.Sprintf("sig-%05d", n-queuetytype.TraceSignals), asMap(t, sigs[0], "signal")["signal_name"], "the oldest listed")
	var kept, budgetCut int
	for i, v := range sigs {
		s := asMap(t, v, "signal")
		size, big := bigSignals[n-queuetytype.TraceSignals+i]
		switch {
		case !big:
			assert.NotNil(t, s["payload"], "signal %v: a small payload", s["signal_name"])
			assert.NotContains(t, s, "payload_omitted_bytes")
		case size > queuetytype.TraceValueBytes:
			assert.Nil(t, s["payload"], "signal %v: over TraceValueBytes", s["signal_name"])
			assert.Equal(t, float64(size), s["payload_omitted_bytes"], "signal %v: its length", s["signal_name"])
		case s["payload"] == nil:
			assert.Equal(t, float64(size), s["payload_omitted_bytes"], "signal %v: its length", s["signal_name"])
			budgetCut++
		default:
			kept++
		}
	}
	assert.Equal(t, 5, kept, "large payloads within TraceSignalBytes (four near the cap, one of 9 KiB)")
	assert.Equal(t, 1, budgetCut, "large payloads past TraceSignalBytes")

	arts := asList(t, tr["artifacts"], "artifacts")
	require.Len(t, arts, queuetytype.TraceArtifacts, "artifacts in the trace")
	kept, budgetCut = 0, 0
	for i, v := range arts {
		a := asMap(t, v, "artifact")
		assert.Equal(t, fmt.Sprintf("a-%05d", i), a["key"], "by key")
		size, big := bigArtifacts[i]
		switch {
		case !big:
			assert.Equal(t, map[string]any{"i": float64(i)}, a["content"], "artifact %d: content", i)
		case size > queuetytype.TraceValueBytes:
			assert.Nil(t, a["content"], "artifact %d: over TraceValueBytes", i)
			assert.Equal(t, float64(size), a["content_omitted_bytes"], "artifact %d: its length", i)
		case a["content"] == nil:
			// Past the budget, an artifact's values are left out together.
			assert.Equal(t, float64(size), a["content_omitted_bytes"], "artifact %d: its length", i)
			assert.Nil(t, a["metadata"], "artifact %d: metadata", i)
			assert.Equal(t, float64(len(`{"m":1}`)), a["metadata_omitted_bytes"], "artifact %d: its metadata's length", i)
			budgetCut++
			continue
		default:
			kept++
		}
		assert.Equal(t, map[string]any{"m": float64(1)}, a["metadata"], "artifact %d: metadata", i)
	}
	assert.Equal(t, 4, kept, "large contents within TraceArtifactBytes")
	assert.Equal(t, 1, budgetCut, "large contents past TraceArtifactBytes")
}
