package readview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/readview"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// fixedClock is a clock that always says the same time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2031, 4, 5, 6, 7, 8, 0, time.UTC)

// open returns a store on freshly migrated tables of the test server, and
// its read views.
func open(t *testing.T) (driver.Store, *readview.Views) {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, readview.New(s, fixedClock{now})
}

// twoSteps is the state of a workflow of two single steps, a and b.
const twoSteps = `{"n":1,"_steps":[{"type":"single","name":"a","class":"A"},{"type":"single","name":"b","class":"B"}],"_queue":"q","_priority":2,"_max_attempts":4}`

// insertWorkflow writes a workflow row with the given state, and each
// row the rows function returns for its id, in one transaction.
func insertWorkflow(t *testing.T, s driver.Store, state string, total int, rows func(tx driver.Tx, id int64) error) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		wf := &driver.Workflow{Name: "wf", Status: driver.WorkflowRunning, State: []byte(state), CurrentStep: 1, TotalSteps: total,
			StartedAt: now, RunNumber: 1, RunStartedAt: now}
		if err := tx.WorkflowInsert(ctx, wf); err != nil {
			return err
		}
		id = wf.ID
		if rows == nil {
			return nil
		}
		return rows(tx, id)
	}))
	return id
}

// history writes n step events and n log rows for workflow id, one a
// second, the events of step 0 carrying the state after it.
func history(n int) func(tx driver.Tx, id int64) error {
	return func(tx driver.Tx, id int64) error {
		ctx := context.Background()
		var events []*driver.WorkflowEvent
		var logs []*driver.LogEntry
		step := 0
		for i := range n {
			at := now.Add(time.Duration(i) * time.Second)
			events = append(events, &driver.WorkflowEvent{WorkflowID: id, StepIndex: 0, StepName: "a", StepType: "single", Handler: "A",
				Event: driver.EventStepCompleted, StateAfter: fmt.Appendf(nil, `{"n":%d}`, i), Output: []byte(`{"i":1}`), CreatedAt: at})
			logs = append(logs, &driver.LogEntry{WorkflowID: id, StepIndex: &step, Handler: "A", Queue: "q", Event: driver.LogCompleted,
				Context: fmt.Appendf(nil, `{"i":%d}`, i), CreatedAt: at})
		}
		if err := tx.EventInsert(ctx, events); err != nil {
			return err
		}
		return tx.LogInsert(ctx, logs)
	}
}

// TestDescribeTimelinePages: the timeline's pages, read one after the
// other, are the whole timeline in order, each counts what it left out,
// and the bounds hold: a negative offset reads the first page, a limit
// past MaxTimelineEntries reads that many, and a page past the end is
// empty.
func TestDescribeTimelinePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, v := open(t)
	const n = 7 // events and as many log rows
	id := insertWorkflow(t, s, twoSteps, 2, history(n))

	whole, err := v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{TimelineLimit: 2 * n})
	require.NoError(t, err)
	require.Len(t, whole.Timeline, 2*n)
	assert.Equal(t, 2*n, whole.TimelineTotal)
	assert.Zero(t, whole.TimelineMore)

	var paged []queuetytype.TimelineEntry
	for off := 0; off < 2*n; off += 3 {
		p, err := v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{TimelineOffset: off, TimelineLimit: 3})
		require.NoError(t, err)
		assert.Equal(t, 2*n, p.TimelineTotal)
		assert.Equal(t, max(2*n-off-len(p.Timeline), 0), p.TimelineMore, "offset %d", off)
		assert.LessOrEqual(t, len(p.Timeline), 3)
		paged = append(paged, p.Timeline...)
	}
	assert.Equal(t, whole.Timeline, paged)

	neg, err := v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{TimelineOffset: -5, TimelineLimit: 2})
	require.NoError(t, err)
	assert.Equal(t, whole.Timeline[:2], neg.Timeline, "a negative offset reads from the start")

	big, err := v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{TimelineLimit: queuetytype.MaxTimelineEntries * 10})
	require.NoError(t, err)
	assert.Len(t, big.Timeline, 2*n, "a limit past the maximum reads within it")

	past, err := v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{TimelineOffset: queuetytype.MaxTimelineOffset * 2})
	require.NoError(t, err)
	assert.Empty(t, past.Timeline)
	assert.Zero(t, past.TimelineMore)

	// The description reads the state the engine wrote.
	assert.Equal(t, "q", whole.Queue)
	assert.Equal(t, queuetytype.Priority(2), whole.Priority)
	assert.Equal(t, 4, whole.MaxAttempts)
	require.Len(t, whole.Steps, 2)
	assert.Equal(t, "b", whole.CurrentStepName)
	assert.Equal(t, []string{"A"}, whole.Steps[0].Handlers)
	assert.Equal(t, "completed", whole.Steps[0].Status)
	assert.Equal(t, map[string]any{"n": int64(1)}, whole.State)
}

// TestMalformedStateIsDescribedNotRefused: a workflow whose state does not
// decode, or whose steps do not parse, is described with what its rows
// say and the reason in StateError; the export and the trace, which must
// carry the state, refuse it with ErrInvalidState. An unknown workflow is
// ErrNotFound in every view.
func TestMalformedStateIsDescribedNotRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, v := open(t)
	for name, tc := range map[string]struct{ state, says string }{
		"not JSON":   {`{"n":`, "malformed workflow state JSON"},
		"bad _steps": {`{"n":1,"_steps":7}`, "malformed workflow steps"},
		"bad a step": {`{"_steps":[{"type":"single","name":"a"}]}`, "single step has no class"},
		"no _steps":  {`{"n":1}`, "state has no _steps"},
	} {
		t.Run(name, func(t *testing.T) {
			id := insertWorkflow(t, s, tc.state, 2, history(2))
			d, err := v.DescribeWorkflow(ctx, id)
			require.NoError(t, err)
			assert.Contains(t, d.StateError, tc.says)
			assert.Empty(t, d.Steps)
			assert.Len(t, d.Timeline, 4, "the rows are described")
			_, err = v.ExportWorkflow(ctx, id)
			if tc.says == "malformed workflow state JSON" {
				assert.ErrorIs(t, err, queuetytype.ErrInvalidState, "export")
				_, err = v.TraceWorkflow(ctx, id)
				assert.ErrorIs(t, err, queuetytype.ErrInvalidState, "trace")
			} else {
				assert.NoError(t, err, "the state decodes: it exports")
			}
		})
	}
	_, err := v.DescribeWorkflow(ctx, 1<<40)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)
	_, err = v.ExportWorkflow(ctx, 1<<40)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)
	_, err = v.TraceWorkflow(ctx, 1<<40)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)
	_, err = v.StateAt(ctx, 1<<40, 0)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)
}

// TestTracePages: following next_offset from the first page reads every
// event once, in id order, and each page counts the events after it.
func TestTracePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, v := open(t)
	const n = 8
	id := insertWorkflow(t, s, twoSteps, 2, history(n))
	var seen []int64
	off := int64(0)
	for pages := 0; ; pages++ {
		require.Less(t, pages, n, "pages end")
		b, err := v.TraceWorkflowWith(ctx, id, queuetytype.TraceOptions{Offset: int(off), Limit: 3})
		require.NoError(t, err)
		var doc struct {
			Events []struct{ ID int64 } `json:"events"`
			Page   struct {
				Total  int64  `json:"events_total"`
				Shown  int64  `json:"events_shown"`
				More   int64  `json:"events_more"`
				Next   *int64 `json:"next_offset"`
				Offset int64  `json:"events_offset"`
			} `json:"page"`
		}
		require.NoError(t, json.Unmarshal(workflowstate.EncodeJSON(b), &doc))
		assert.Equal(t, int64(n), doc.Page.Total)
		assert.Equal(t, off, doc.Page.Offset)
		assert.Equal(t, int64(len(doc.Events)), doc.Page.Shown)
		assert.Equal(t, int64(n)-off-doc.Page.Shown, doc.Page.More)
		for _, e := range doc.Events {
			seen = append(seen, e.ID)
		}
		if doc.Page.Next == nil {
			break
		}
		off = *doc.Page.Next
	}
	require.Len(t, seen, n)
	for i := 1; i < n; i++ {
		assert.Less(t, seen[i-1], seen[i], "id order")
	}
}

// TestStateAt: the state after a step is the newest recorded one; a step
// with no recorded state is ErrNotFound.
func TestStateAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, v := open(t)
	id := insertWorkflow(t, s, twoSteps, 2, history(3))
	st, err := v.StateAt(ctx, id, 0)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": int64(2)}, st)
	_, err = v.StateAt(ctx, id, 1)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound)
}

// TestExportReplayRoundTrip: an export replayed by the engine and
// exported again has the same state, events, logs, signals, artifacts and
// wait dependencies (ids and the new workflow's own apart), plus the
// workflow_replayed event.
func TestExportReplayRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, v := open(t)
	dep := insertWorkflow(t, s, twoSteps, 2, nil)
	id := insertWorkflow(t, s, twoSteps, 2, func(tx driver.Tx, id int64) error {
		if err := history(3)(tx, id); err != nil {
			return err
		}
		step := 1
		if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: id, Name: "go", Payload: []byte(`{"ok":true}`), ReceivedAt: now}); err != nil {
			return err
		}
		for _, a := range []*driver.Artifact{
			{WorkflowID: id, Key: "doc", Kind: "json", Content: []byte(`{"x":[1,2]}`), Metadata: []byte(`{"m":"v"}`), StepIndex: &step, CreatedAt: now, UpdatedAt: now},
			{WorkflowID: id, Key: "note", Kind: "text", Content: []byte("plain text"), Metadata: []byte(`[]`), CreatedAt: now, UpdatedAt: now},
		} {
			if err := tx.ArtifactPut(ctx, a); err != nil {
				return err
			}
		}
		return tx.DependencyInsert(ctx, []*driver.WorkflowDependency{{WaitingWorkflowID: id, StepIndex: 1, DependencyWorkflowID: dep, CreatedAt: now}})
	})
	first, err := v.ExportWorkflow(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "2031-04-05T06:07:08+00:00", str(t, first, "exported_at"), "dated by the views' clock")

	// Replay a paused copy: a running one would enqueue its step's job.
	wf, _ := first.Get("workflow")
	wf.(*phpjson.Object).Set("status", "paused")
	replayed, err := engine.New(s, engine.Config{Clock: fixedClock{now}}).Operations().ReplayWorkflow(ctx, first)
	require.NoError(t, err)
	second, err := v.ExportWorkflow(ctx, replayed)
	require.NoError(t, err)

	sameRows := func(key string, drop ...string) {
		t.Helper()
		a, b := rows(t, first, key, drop...), rows(t, second, key, drop...)
		if key == "events" {
			require.Len(t, b, len(a)+1)
			assert.Equal(t, "workflow_replayed", b[len(b)-1]["event"])
			b = b[:len(a)]
		}
		assert.Equal(t, a, b, key)
	}
	sameRows("events", "id", "job_id")
	sameRows("logs", "id", "job_id")
	sameRows("signals", "id", "workflow_id")
	sameRows("artifacts", "id", "workflow_id")
	sameRows("wait_dependencies", "id", "waiting_workflow_id")
	w1, _ := first.Get("workflow")
	w2, _ := second.Get("workflow")
	s1, _ := w1.(*phpjson.Object).Get("state")
	s2, _ := w2.(*phpjson.Object).Get("state")
	assert.JSONEq(t, string(workflowstate.EncodeJSON(s1)), string(workflowstate.EncodeJSON(s2)), "state")
	assert.Equal(t, "paused", str(t, w2.(*phpjson.Object), "status"))
}

func str(t *testing.T, o *phpjson.Object, k string) string {
	t.Helper()
	v, _ := o.Get(k)
	s, ok := v.(string)
	require.True(t, ok, "%s is %T", k, v)
	return s
}

// rows returns an export's list under key as plain maps, without the
// columns named in drop.
func rows(t *testing.T, export *phpjson.Object, key string, drop ...string) []map[string]any {
	t.Helper()
	v, ok := export.Get(key)
	require.True(t, ok, key)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(workflowstate.EncodeJSON(v), &out))
	for _, r := range out {
		for _, k := range drop {
			delete(r, k)
		}
	}
	return out
}
