package cli_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
)

func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	out := mustRun(t, nil, "--dsn", dsn, "webhook", "add", "job.buried", "https://hooks.example.com/a")
	assert.Equal(t, "Webhook #1 registered for event 'job.buried'.\n", out)
	added := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "webhook", "add", "workflow.failed", "http://127.0.0.1:9/b", "--json"))
	assert.Equal(t, map[string]any{"id": float64(2), "event": "workflow.failed", "url": "http://127.0.0.1:9/b"}, added)

	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "webhook", "list", "--json"))
	require.Len(t, list, 2)
	assert.Equal(t, "job.buried", list[0]["event"])
	assert.Equal(t, "https://hooks.example.com/a", list[0]["url"])
	assert.NotEmpty(t, list[0]["created_at"], "created_at")
	table := mustRun(t, nil, "--dsn", dsn, "webhook", "list")
	assert.Contains(t, table, "ID  EVENT")
	assert.Contains(t, table, "workflow.failed  http://127.0.0.1:9/b")

	wantFail(t, 2, `unknown webhook event "job.done"`, "--dsn", dsn, "webhook", "add", "job.done", "https://x.example")
	wantFail(t, 2, "must start with http:// or https://", "--dsn", dsn, "webhook", "add", "job.failed", "ftp://x.example")
	wantFail(t, 2, "missing arguments", "--dsn", dsn, "webhook", "add", "job.failed")

	assert.Equal(t, "Webhook #1 removed.\n", mustRun(t, nil, "--dsn", dsn, "webhook", "remove", "1"))
	wantFail(t, 1, "webhook 1: not found", "--dsn", dsn, "webhook", "remove", "1")
	removed := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "webhook", "remove", "2", "--json"))
	assert.Equal(t, map[string]any{"id": float64(2), "removed": true}, removed)
	assert.Equal(t, "No webhooks registered.\n", mustRun(t, nil, "--dsn", dsn, "webhook", "list"))
	assert.Equal(t, "[]\n", mustRun(t, nil, "--dsn", dsn, "webhook", "list", "--json"))
}

func TestWorkflowArtifactCommands(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "brief", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "draft"},
	}}, nil)
	require.NoError(t, err)
	reg := queuety.NewRegistry()
	reg.HandleStep("draft", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		if err := queuety.PutArtifact(ctx, "draft", map[string]any{"title": "Pricing", "url": "https://a.example/x"},
			queuety.ArtifactMetadata(map[string]any{"source": "planner"})); err != nil {
			return nil, err
		}
		return nil, queuety.PutArtifact(ctx, "notes", "# Notes\n\nDone.", queuety.ArtifactKind("markdown"))
	})
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	sid := strconv.FormatInt(id, 10)

	table := mustRun(t, nil, "--dsn", dsn, "workflow", "artifacts", sid)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 3, "header and two artifacts:\n%s", table)
	assert.Regexp(t, `^KEY\s+KIND\s+STEP\s+UPDATED AT$`, lines[0])
	assert.Regexp(t, `^draft\s+json\s+0\s+\d{4}-`, lines[1])
	assert.Regexp(t, `^notes\s+markdown\s+0\s+`, lines[2])

	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "artifacts", sid, "--json"))
	require.Len(t, list, 2)
	assert.NotContains(t, list[0], "content", "without --with-content")
	assert.Equal(t, map[string]any{"source": "planner"}, list[0]["metadata"])
	list = decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "artifacts", sid, "--with-content", "--json"))
	assert.Equal(t, map[string]any{"title": "Pricing", "url": "https://a.example/x"}, list[0]["content"])
	assert.Equal(t, "# Notes\n\nDone.", list[1]["content"])
	withContent := mustRun(t, nil, "--dsn", dsn, "workflow", "artifacts", sid, "--with-content")
	assert.Contains(t, withContent, `{"title":"Pricing","url":"https://a.example/x"}`)

	one := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "artifact", sid, "notes", "--json"))
	assert.Equal(t, "markdown", one["kind"])
	assert.Equal(t, float64(0), one["step_index"])
	assert.Equal(t, "# Notes\n\nDone.", one["content"])
	text := mustRun(t, nil, "--dsn", dsn, "workflow", "artifact", sid, "notes")
	assert.True(t, strings.HasPrefix(text, "Artifact notes of workflow "+sid+" (markdown)\n"), "text:\n%s", text)
	assert.True(t, strings.HasSuffix(text, "\n# Notes\n\nDone.\n"), "the content as stored:\n%s", text)
	draft := mustRun(t, nil, "--dsn", dsn, "workflow", "artifact", sid, "draft")
	assert.Contains(t, draft, `metadata    {"source":"planner"}`)
	assert.Contains(t, draft, "\"title\": \"Pricing\"", "JSON content indented")

	wantFail(t, 1, `artifact "missing" of workflow `+sid+": not found", "--dsn", dsn, "workflow", "artifact", sid, "missing")
	assert.Equal(t, "No artifacts for workflow #999.\n", mustRun(t, nil, "--dsn", dsn, "workflow", "artifacts", "999"))
	wantFail(t, 2, "missing arguments", "--dsn", dsn, "workflow", "artifact", sid)
}
