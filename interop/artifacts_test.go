package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestArtifactsAndWebhooksFixture replays u_artifacts_webhooks with Go:
// the step storing artifacts, put_artifact from outside, and registering
// and removing webhooks write PHP's rows; and Go reads the rows PHP wrote.
func TestArtifactsAndWebhooksFixture(t *testing.T) {
	e := newEnv(t, "u_artifacts_webhooks.json")
	const wf = 1

	t.Run("StepStoresArtifacts", func(t *testing.T) {
		e := e.on(t)
		e.load("dispatched")
		w := e.worker()
		w.HandleStep(hStoreArtifacts, goArtifactStep)
		w.HandleStep(hFinish, func(context.Context, queuety.State) (queuety.State, error) {
			return queuety.State{"finished": true}, nil
		})
		e.drain(w)
		e.compareWith(e.snap("completed"))
	})

	t.Run("PutArtifactFromOutside", func(t *testing.T) {
		e := e.on(t)
		e.load("completed")
		e.clock.Advance(time.Second)
		require.NoError(t, e.c.PutArtifact(e.ctx, wf, "plan", "v2", queuety.ArtifactKind("text"),
			queuety.ArtifactMetadata(map[string]any{"by": "ops/1"})))
		require.NoError(t, e.c.PutArtifact(e.ctx, wf, "numbers", []int{1, 2}, queuety.ArtifactKind("list"), queuety.ArtifactStep(1)))
		e.compareWith(e.snap("artifacts put from outside"))
	})

	t.Run("WebhooksAddedAndRemoved", func(t *testing.T) {
		e := e.on(t)
		e.load("artifacts put from outside")
		for _, h := range [][2]string{
			{queuety.WebhookJobBuried, "https://hooks.example.com/services/T0/B0"},
			{queuety.WebhookWorkflowFailed, "http://127.0.0.1:8080/queuety?x=1"},
		} {
			_, err := e.c.AddWebhook(e.ctx, h[0], h[1])
			require.NoError(t, err)
		}
		e.compareWith(e.snap("webhooks registered"))
		require.NoError(t, e.c.RemoveWebhook(e.ctx, 1))
		e.compareWith(e.snap("one webhook removed"))
	})

	t.Run("GoReadsPHPRows", func(t *testing.T) {
		e := e.on(t)
		s := e.load("one webhook removed")
		hooks, err := e.c.Webhooks(e.ctx)
		require.NoError(t, err)
		require.Len(t, hooks, 1)
		assert.Equal(t, queuetytype.Webhook{ID: 2, Event: "workflow.failed", URL: "http://127.0.0.1:8080/queuety?x=1",
			CreatedAt: e.snap("webhooks registered").Now()}, *hooks[0])

		list, err := e.c.Artifacts(e.ctx, wf, true)
		require.NoError(t, err)
		require.Len(t, list, 3)
		draft, numbers, plan := list[0], list[1], list[2]
		assert.Equal(t, "draft", draft.Key)
		assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", draft.Content)
		assert.Equal(t, map[string]any{}, draft.Metadata, "PHP's [] metadata")
		require.NotNil(t, draft.StepIndex)
		assert.Equal(t, 0, *draft.StepIndex)
		assert.Equal(t, "[1,2]", numbers.Content, "a list kind's content is text, not decoded")
		assert.Equal(t, "text", plan.Kind)
		assert.Equal(t, "v2", plan.Content)
		assert.Nil(t, plan.StepIndex, "replaced without a step")
		assert.Equal(t, map[string]any{"by": "ops/1"}, plan.Metadata)
		assert.True(t, plan.UpdatedAt.After(plan.CreatedAt), "updated after it was created")
		assert.False(t, plan.UpdatedAt.After(s.Now()), "times as PHP stored them")

		e.load("completed")
		one, err := e.c.Artifact(e.ctx, wf, "plan")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"steps": []any{"research", "write"}, "title": "Ünïcode", "url": "https://example.com/a/b"}, one.Content)
		assert.Equal(t, map[string]any{"model": "m/1", "source": "planner"}, one.Metadata)
		export, err := e.c.ExportWorkflow(e.ctx, wf)
		require.NoError(t, err)
		assert.Contains(t, string(export), `"artifacts":[{"id":2,"workflow_id":1,"key":"draft","kind":"markdown",`, "export lists PHP's artifacts")
	})
}
