package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Streaming/RetryResumesWithStoredChunks", testStreamingResume)
	register("Streaming/OnlyInsideAStep", testStreamingOutsideStep)
	register("Trace/RuntimeMetadataOnEvents", testTraceMetadata)
	register("Trace/FailedStepAndBranchEvents", testTraceFailedAndBranch)
}

// chunkRows reads the chunk rows of a job.
func (e *Env) chunkRows(jobID int64) []*driver.Chunk {
	e.T.Helper()
	var rows []*driver.Chunk
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { rows, err = tx.ChunkList(e.Ctx, jobID); return err }))
	return rows
}

// streamWords is a streaming step: it resumes after the chunks stored so
// far, streams the words of state "words" one chunk each, fails its first
// attempt after failAfter chunks, and returns the chunks joined.
func streamWords(failAfter int, seen *[][]string) queuety.StepFunc {
	return func(ctx context.Context, st queuety.State) (queuety.State, error) {
		existing, err := queuety.StreamedChunks(ctx)
		if err != nil {
			return nil, err
		}
		*seen = append(*seen, existing)
		info, _ := queuety.JobInfoFrom(ctx)
		words := strings.Fields(st.String("words"))
		for i := len(existing); i < len(words); i++ {
			if info.Attempt == 1 && i == failAfter {
				return nil, errors.New("stream interrupted")
			}
			if err := queuety.StreamChunk(ctx, words[i]+" "); err != nil {
				return nil, err
			}
		}
		all, err := queuety.StreamedChunks(ctx)
		if err != nil {
			return nil, err
		}
		return queuety.State{"text": strings.Join(all, "")}, nil
	}
}

func testStreamingResume(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("draft").Then("stream", builder.Retry(3, queuety.BackoffSeconds(10))), queuety.State{"words": "one two three four"})
	var seen [][]string
	w := e.Worker(nil)
	w.HandleStep("stream", streamWords(2, &seen))
	e.Drain(w)
	job := e.OneJob(driver.JobFilter{WorkflowID: id})
	require.Equal(t, driver.JobPending, job.Status, "the first attempt failed and is retried")

	// Rows as Queuety's ChunkStore::append_chunk writes them, kept for the
	// next attempt, and listed by the export and the trace.
	rows := e.chunkRows(job.ID)
	require.Len(t, rows, 2, "chunks of the failed attempt")
	for i, c := range rows {
		assert.Equal(t, job.ID, c.JobID)
		assert.Equal(t, id, c.WorkflowID)
		require.NotNil(t, c.StepIndex)
		assert.Equal(t, 0, *c.StepIndex)
		assert.Equal(t, i, c.ChunkIndex)
		assert.Equal(t, Epoch, c.CreatedAt)
	}
	assert.Equal(t, []string{"one ", "two "}, []string{rows[0].Content, rows[1].Content})
	export, err := e.C.ExportWorkflow(e.Ctx, id)
	require.NoError(t, err)
	chunks := jsonKey(t, export, "chunks")
	assert.Equal(t, fmt.Sprintf(`[{"id":%d,"job_id":%d,"workflow_id":%d,"step_index":0,"chunk_index":0,"content":"one ","created_at":"%s"},`+
		`{"id":%d,"job_id":%d,"workflow_id":%d,"step_index":0,"chunk_index":1,"content":"two ","created_at":"%s"}]`,
		rows[0].ID, job.ID, id, Epoch.Format(time.DateTime), rows[1].ID, job.ID, id, Epoch.Format(time.DateTime)), string(mustMarshal(t, chunks)), "export chunks")
	trace, err := e.C.TraceWorkflow(e.Ctx, id)
	require.NoError(t, err)
	tchunks := jsonKey(t, trace, "chunks")
	assert.Equal(t, string(mustMarshal(t, chunks)), string(mustMarshal(t, tchunks)), "trace chunks")

	e.Clock.Advance(time.Minute)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)
	assert.Equal(t, [][]string{nil, {"one ", "two "}}, normalizeSeen(seen), "the retry started from the stored chunks")
	assert.Equal(t, "one two three four ", e.rawStateString(id, "text"), "output built from every chunk")
	assert.Empty(t, e.chunkRows(job.ID), "chunks are deleted once the step completed")

	var completed, failed *driver.WorkflowEvent
	for _, ev := range e.events(id) {
		switch ev.Event {
		case driver.EventStepCompleted:
			completed = ev
		case driver.EventStepFailed:
			failed = ev
		}
	}
	require.NotNil(t, completed)
	require.NotNil(t, failed)
	ref := fmt.Sprintf(`{"job_id":%d,"workflow_id":%d,"step_index":0,"chunk_index":null,"content":null}`, job.ID, id)
	assert.Equal(t, "["+strings.Repeat(ref+",", 3)+ref+"]", string(completed.Chunks),
		"one reference per chunk, as Queuety PHP writes them")
	assert.Nil(t, failed.Chunks, "a failed attempt records no chunks")

	// Replaying the export taken mid-stream copies its chunks, with the
	// job id as exported, as Queuety's replayer does.
	replayed, err := e.C.ReplayWorkflow(e.Ctx, export)
	require.NoError(t, err)
	var copied []*driver.Chunk
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) {
		copied, err = tx.ChunkListWorkflow(e.Ctx, replayed, 0, 10)
		return err
	}))
	require.Len(t, copied, 2, "chunks of the replayed workflow")
	assert.Equal(t, []string{"one ", "two "}, []string{copied[0].Content, copied[1].Content})
	assert.Equal(t, job.ID, copied[0].JobID, "the job id as exported")
}

// jsonKey returns the value of key in a JSON object.
func jsonKey(t *testing.T, doc []byte, key string) any {
	t.Helper()
	o, err := phpjson.DecodeObject(doc)
	require.NoError(t, err)
	v, ok := o.Get(key)
	require.True(t, ok, "key %q", key)
	return v
}

// normalizeSeen turns empty chunk lists into nil.
func normalizeSeen(seen [][]string) [][]string {
	out := make([][]string, len(seen))
	for i, s := range seen {
		if len(s) > 0 {
			out[i] = s
		}
	}
	return out
}

func testStreamingOutsideStep(t *testing.T, e *Env) {
	assert.ErrorIs(t, queuety.StreamChunk(e.Ctx, "x"), queuetytype.ErrNoAttempt)
	_, err := queuety.StreamedChunks(e.Ctx)
	assert.ErrorIs(t, err, queuetytype.ErrNoAttempt)
	assert.ErrorIs(t, queuety.TraceInput(e.Ctx, map[string]any{}), queuetytype.ErrNoAttempt)
	var jobErr, traceErr error
	w := e.Worker(nil)
	w.HandleJob("plain", func(ctx context.Context, _ queuety.Payload) error {
		jobErr = queuety.StreamChunk(ctx, "x")
		traceErr = queuety.TraceContext(ctx, map[string]any{"a": 1})
		return nil
	})
	e.Dispatch("plain", nil)
	e.Drain(w)
	assert.ErrorIs(t, jobErr, queuetytype.ErrNoWorkflowStep)
	w.HandleStep("binary", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		jobErr = queuety.StreamChunk(ctx, "\xff\xfe")
		return nil, nil
	})
	_ = e.startB(builder.Workflow("wf").Then("binary"), nil)
	e.Drain(w)
	assert.ErrorIs(t, jobErr, queuetytype.ErrInvalidArgument, "a chunk that is not UTF-8")
	assert.ErrorIs(t, traceErr, queuetytype.ErrNoWorkflowStep)
	w.HandleStep("bad", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		traceErr = queuety.TraceOutput(ctx, func() {})
		return nil, nil
	})
	id := e.startB(builder.Workflow("wf").Then("bad"), nil)
	e.Drain(w)
	assert.ErrorIs(t, traceErr, queuetytype.ErrInvalidArgument, "a value JSON cannot hold")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)
}

func testTraceMetadata(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("traced").Then("load"), queuety.State{"post_id": 7})
	w := e.Worker(nil)
	w.HandleStep("load", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		require.NoError(t, queuety.TraceInput(ctx, map[string]any{"resolved": map[string]any{"id": 7}}))
		require.NoError(t, queuety.TraceContext(ctx, map[string]any{"ability": "content/load-post"}))
		require.NoError(t, queuety.TraceOutput(ctx, map[string]any{"post": "Hello"}))
		return queuety.State{"result": "done", queuety.TraceOutputKey: map[string]any{
			"context":   map[string]any{"node_id": "loadPost"},
			"artifacts": []any{map[string]any{"key": "brief", "kind": "markdown"}, "not an array", []any{"a list"}},
			"chunks":    []any{map[string]any{"chunk_index": 0}},
		}}, nil
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status)
	raw := e.rawState(id)
	_, has := raw.Get(queuety.TraceOutputKey)
	assert.False(t, has, "the trace key is not merged into the state")
	assert.Equal(t, "done", func() any { v, _ := raw.Get("result"); return v }())
	events := e.events(id)
	require.Len(t, events, 2)
	started, done := events[0], events[1]
	assert.Equal(t, `{"post_id":7}`, string(started.Input), "step_started keeps the state it received")
	assert.Equal(t, `{"resolved":{"id":7}}`, string(done.Input), "trace_input")
	assert.Equal(t, `{"post":"Hello"}`, string(done.Output), "trace_output replaces the output")
	assert.Equal(t, `{"ability":"content\/load-post","node_id":"loadPost"}`, string(done.Context), "trace_context merged with the reserved key's")
	assert.Equal(t, `[{"key":"brief","kind":"markdown"},[]]`, string(done.Artifacts),
		"artifacts from the reserved key: a scalar is dropped, a list keeps none of its integer keys")
	assert.Equal(t, `[{"chunk_index":0}]`, string(done.Chunks), "chunks from the reserved key")
	assert.Equal(t, `{"post_id":7,"result":"done"}`, string(done.StateAfter))
}

func testTraceFailedAndBranch(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("traced").Then("fails", builder.Retry(1)), queuety.State{"n": 1})
	w := e.Worker(nil)
	w.HandleStep("fails", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		require.NoError(t, queuety.TraceInput(ctx, "a scalar is ignored"))
		require.NoError(t, queuety.TraceInput(ctx, []any{"resolved"}))
		require.NoError(t, queuety.TraceContext(ctx, map[string]any{"b": 2, "a": 1}))
		require.NoError(t, queuety.TraceOutput(ctx, map[string]any{"ignored": true}))
		return nil, queuety.NonRetryable(errors.New("no"))
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status)
	var failed *driver.WorkflowEvent
	for _, ev := range e.events(id) {
		if ev.Event == driver.EventStepFailed {
			failed = ev
		}
	}
	require.NotNil(t, failed)
	assert.Equal(t, `["resolved"]`, string(failed.Input), "trace input on step_failed")
	assert.Equal(t, `{"a":1,"b":2}`, string(failed.Context), "trace context on step_failed, keys sorted")
	assert.Nil(t, failed.Output)

	fe := e.startB(builder.Workflow("fe").ForEach("items", "item", builder.ResultKey("out")), queuety.State{"items": []any{"x"}})
	w.HandleForEach("item", func(ctx context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		require.NoError(t, queuety.TraceInput(ctx, "scalar input replaces a branch's"))
		require.NoError(t, queuety.TraceContext(ctx, map[string]any{"model": "m1"}))
		return queuety.State{"v": item}, nil
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(fe).Status)
	var item *driver.WorkflowEvent
	for _, ev := range e.events(fe) {
		if ev.Event == driver.EventStepItemCompleted {
			item = ev
		}
	}
	require.NotNil(t, item)
	assert.Equal(t, `"scalar input replaces a branch's"`, string(item.Input))
	assert.Equal(t, `{"item_index":0,"item":"x","model":"m1"}`, string(item.Context), "item context first, then the trace context")
}

// rawStateString returns a string key of a workflow's stored state.
func (e *Env) rawStateString(id int64, key string) string {
	e.T.Helper()
	v, _ := e.rawState(id).Get(key)
	s, _ := v.(string)
	return s
}
