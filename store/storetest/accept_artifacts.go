package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Artifacts/StepsStoreAndClientReads", testArtifactsFromSteps)
	register("Artifacts/ClientPutReplaceDeleteAndErrors", testArtifactsFromClient)
	register("Artifacts/ExportAndReplayCarryThem", testArtifactsExportReplay)
}

// artifactWorkflow runs a two-step workflow whose steps store artifacts:
// "plan" (JSON with metadata) in step 0, "draft" (markdown) in step 1.
func (e *Env) artifactWorkflow() int64 {
	e.T.Helper()
	id := e.startB(builder.Workflow("brief").Then("plan").Then("write"), queuety.State{"topic": "pricing"})
	w := e.Worker(nil)
	w.HandleStep("plan", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		return queuety.State{"planned": true}, queuety.PutArtifact(ctx, "plan",
			map[string]any{"url": "https://example.com/a/b", "steps": []string{"research", "write"}, "title": "Ünïcode"},
			queuety.ArtifactMetadata(map[string]any{"source": "planner", "model": "m/1"}))
	})
	w.HandleStep("write", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		return nil, queuety.PutArtifact(ctx, " draft ", "# Pricing\n\nSee https://example.com/x.", queuety.ArtifactKind("markdown"))
	})
	e.Drain(w)
	require.Equal(e.T, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "workflow")
	return id
}

func (e *Env) artifactRow(wf int64, key string) *driver.Artifact {
	e.T.Helper()
	var a *driver.Artifact
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { a, err = tx.ArtifactGet(e.Ctx, wf, key); return err }))
	return a
}

func testArtifactsFromSteps(t *testing.T, e *Env) {
	id := e.artifactWorkflow()
	// Rows as Queuety's ArtifactStore::put writes them: JSON content with
	// JSON_UNESCAPED_SLASHES, metadata with json_encode's defaults.
	plan := e.artifactRow(id, "plan")
	assert.Equal(t, `{"steps":["research","write"],"title":"\u00dcn\u00efcode","url":"https://example.com/a/b"}`, string(plan.Content), "content")
	assert.Equal(t, `{"model":"m\/1","source":"planner"}`, string(plan.Metadata), "metadata")
	assert.Equal(t, "json", plan.Kind)
	require.NotNil(t, plan.StepIndex)
	assert.Equal(t, 0, *plan.StepIndex, "step index from the attempt")
	assert.Equal(t, Epoch, plan.CreatedAt)
	draft := e.artifactRow(id, "draft")
	assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", string(draft.Content), "text kinds are stored as is, key trimmed")
	assert.Equal(t, `[]`, string(draft.Metadata), "no metadata is an empty PHP array")

	list, err := e.C.Artifacts(e.Ctx, id, false)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{"draft", "plan"}, []string{list[0].Key, list[1].Key}, "by key")
	assert.False(t, list[0].HasContent, "no content unless asked")
	assert.Nil(t, list[0].Content)
	assert.Equal(t, map[string]any{}, list[0].Metadata, "empty metadata")
	assert.Equal(t, map[string]any{"source": "planner", "model": "m/1"}, list[1].Metadata)
	list, err = e.C.Artifacts(e.Ctx, id, true)
	require.NoError(t, err)
	assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", list[0].Content)
	one, err := e.C.Artifact(e.Ctx, id, "plan")
	require.NoError(t, err)
	assert.True(t, one.HasContent)
	assert.Equal(t, map[string]any{"url": "https://example.com/a/b", "steps": []any{"research", "write"}, "title": "Ünïcode"}, one.Content)
	assert.Equal(t, id, one.WorkflowID)

	// The step_completed events list the artifacts each step stored, as
	// Queuety's trace does; other events have none.
	var events []*driver.WorkflowEvent
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) (err error) { events, err = tx.EventList(e.Ctx, id); return err }))
	byStep := map[int]string{}
	for _, ev := range events {
		if ev.Event == driver.EventStepCompleted {
			byStep[ev.StepIndex] = string(ev.Artifacts)
		} else {
			assert.Nil(t, ev.Artifacts, "%s event of step %d", ev.Event, ev.StepIndex)
		}
	}
	assert.Equal(t, map[int]string{
		0: `[{"key":"plan","kind":"json","step_index":0,"metadata":{"model":"m\/1","source":"planner"}}]`,
		1: `[{"key":"draft","kind":"markdown","step_index":1,"metadata":[]}]`,
	}, byStep, "artifacts column of step_completed")
}

func testArtifactsFromClient(t *testing.T, e *Env) {
	id := e.artifactWorkflow()
	first := e.artifactRow(id, "plan")
	e.Clock.Advance(time.Minute)
	require.NoError(t, e.C.PutArtifact(e.Ctx, id, "plan", "v2", queuety.ArtifactKind("text")))
	replaced := e.artifactRow(id, "plan")
	assert.Equal(t, &driver.Artifact{ID: first.ID, WorkflowID: id, Key: "plan", Kind: "text", Content: []byte("v2"), Metadata: []byte(`[]`),
		CreatedAt: Epoch, UpdatedAt: Epoch.Add(time.Minute)}, replaced, "replaced: same id and created_at, no step index")
	require.NoError(t, e.C.PutArtifact(e.Ctx, id, "numbers", []int{1, 2}, queuety.ArtifactKind("list"), queuety.ArtifactStep(1)))
	assert.Equal(t, "[1,2]", string(e.artifactRow(id, "numbers").Content), "non-string content of a text kind is JSON")

	for _, bad := range []struct {
		key  string
		opts []queuety.ArtifactOption
		want string
	}{
		{"  ", nil, "non-empty key"},
		{"k", []queuety.ArtifactOption{queuety.ArtifactKind(" ")}, "non-empty kind"},
		{strings.Repeat("k", 192), nil, "longer than 191"},
		{"k", []queuety.ArtifactOption{queuety.ArtifactKind(strings.Repeat("x", 33))}, "longer than 32"},
		{"k", []queuety.ArtifactOption{queuety.ArtifactStep(256)}, "out of range"},
	} {
		err := e.C.PutArtifact(e.Ctx, id, bad.key, 1, bad.opts...)
		require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, bad.want)
		assert.Contains(t, err.Error(), bad.want)
	}
	assert.ErrorIs(t, e.C.PutArtifact(e.Ctx, 99999, "k", 1), queuetytype.ErrNotFound, "unknown workflow")
	assert.ErrorIs(t, queuety.PutArtifact(e.Ctx, "k", 1), queuetytype.ErrNoAttempt, "outside a handler")
	_, err := e.C.Artifact(e.Ctx, id, "nope")
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "missing key")

	e.Dispatch("plain", nil)
	w := e.Worker(nil)
	var plainErr error
	w.HandleJob("plain", func(ctx context.Context, _ queuety.Payload) error {
		plainErr = queuety.PutArtifact(ctx, "k", 1)
		return nil
	})
	e.Drain(w)
	assert.ErrorIs(t, plainErr, queuetytype.ErrNoWorkflowStep, "in a plain job")

	require.NoError(t, e.C.DeleteArtifact(e.Ctx, id, "plan"))
	assert.ErrorIs(t, e.C.DeleteArtifact(e.Ctx, id, "plan"), queuetytype.ErrNotFound, "deleting twice")
	list, err := e.C.Artifacts(e.Ctx, id, false)
	require.NoError(t, err)
	assert.Len(t, list, 2, "draft and numbers remain")
}

func testArtifactsExportReplay(t *testing.T, e *Env) {
	id := e.artifactWorkflow()
	raw, err := e.C.ExportWorkflow(e.Ctx, id)
	require.NoError(t, err)
	var doc struct {
		Artifacts []map[string]any `json:"artifacts"`
		Events    []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Len(t, doc.Artifacts, 2)
	draft, plan := doc.Artifacts[0], doc.Artifacts[1]
	assert.Equal(t, "draft", draft["key"])
	assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", draft["content"], "text content as stored")
	assert.Equal(t, []any{}, draft["metadata"])
	assert.Equal(t, map[string]any{"url": "https://example.com/a/b", "steps": []any{"research", "write"}, "title": "Ünïcode"}, plan["content"])
	assert.Equal(t, "2030-01-02 03:04:05", plan["created_at"], "DATETIME text, as Queuety exports")
	assert.Equal(t, float64(0), plan["step_index"])
	var traced int
	for _, ev := range doc.Events {
		if ev["artifacts"] != nil {
			traced++
		}
	}
	assert.Equal(t, 2, traced, "events keep their artifacts")

	replay, err := e.C.ReplayWorkflow(e.Ctx, raw)
	require.NoError(t, err)
	list, err := e.C.Artifacts(e.Ctx, replay, true)
	require.NoError(t, err)
	require.Len(t, list, 2, "the replay has the artifacts")
	assert.Equal(t, "draft", list[0].Key)
	assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", list[0].Content)
	assert.Equal(t, map[string]any{"source": "planner", "model": "m/1"}, list[1].Metadata)
	assert.Equal(t, Epoch, list[1].CreatedAt, "times from the export")
	// Queuety's replayer re-encodes JSON content with json_encode's defaults.
	assert.Equal(t, `{"steps":["research","write"],"title":"\u00dcn\u00efcode","url":"https:\/\/example.com\/a\/b"}`,
		string(e.artifactRow(replay, "plan").Content))
}
