package cli_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
)

// extraVerbCases covers the verb-table rows of the webhook and artifact verbs.
func extraVerbCases() []verbCase {
	return []verbCase{
		{verb: "webhook add", cmd: "webhook add", test: func(t *testing.T, v *verbEnv) {
			out := v.object("job.buried", "https://hooks.example.com/q")
			hooks, err := v.c.Webhooks(v.ctx)
			require.NoError(t, err)
			require.Len(t, hooks, 1, "webhook rows")
			assert.Equal(t, "job.buried", hooks[0].Event)
			assert.Equal(t, "https://hooks.example.com/q", hooks[0].URL)
			assert.EqualValues(t, hooks[0].ID, out["id"], "printed id")
			v.fails(2, "event", "job.exploded", "https://hooks.example.com/q")
			v.fails(2, "URL", "job.failed", "ftp://nope")
		}},
		{verb: "webhook list", cmd: "webhook list", test: func(t *testing.T, v *verbEnv) {
			for _, ev := range []string{"job.completed", "workflow.failed"} {
				_, err := v.c.AddWebhook(v.ctx, ev, "https://hooks.example.com/"+ev)
				require.NoError(t, err)
			}
			rows := v.list()
			require.Len(t, rows, 2, "listed webhooks")
			assert.Equal(t, "job.completed", rows[0]["event"])
			assert.Equal(t, "https://hooks.example.com/workflow.failed", rows[1]["url"])
		}},
		{verb: "webhook remove", cmd: "webhook remove", test: func(t *testing.T, v *verbEnv) {
			hook, err := v.c.AddWebhook(v.ctx, "job.failed", "https://hooks.example.com/f")
			require.NoError(t, err)
			id := hook.ID
			v.run(strconv.FormatInt(id, 10))
			hooks, err := v.c.Webhooks(v.ctx)
			require.NoError(t, err)
			assert.Empty(t, hooks, "webhooks after remove")
			v.fails(1, "not found", strconv.FormatInt(id, 10))
		}},
		{verb: "workflow artifacts", cmd: "workflow artifacts", test: func(t *testing.T, v *verbEnv) {
			wf := v.start("default", "verbs.a")
			require.NoError(t, v.c.PutArtifact(v.ctx, wf, "plan", map[string]any{"steps": 2}))
			require.NoError(t, v.c.PutArtifact(v.ctx, wf, "draft", "# Draft", queuety.ArtifactKind("markdown")))
			rows := v.list(strconv.FormatInt(wf, 10))
			require.Len(t, rows, 2, "artifacts")
			keys := []any{rows[0]["key"], rows[1]["key"]}
			assert.ElementsMatch(t, []any{"plan", "draft"}, keys)
			assert.NotContains(t, rows[0], "content", "content without --with-content")
			full := v.list(strconv.FormatInt(wf, 10), "--with-content")
			for _, r := range full {
				assert.Contains(t, r, "content", "content with --with-content: %v", r)
			}
		}},
		{verb: "workflow artifact", cmd: "workflow artifact", test: func(t *testing.T, v *verbEnv) {
			wf := v.start("default", "verbs.a")
			require.NoError(t, v.c.PutArtifact(v.ctx, wf, "plan", map[string]any{"steps": 2}))
			got := v.object(strconv.FormatInt(wf, 10), "plan")
			assert.Equal(t, "plan", got["key"])
			assert.Equal(t, map[string]any{"steps": float64(2)}, got["content"])
			v.fails(1, "not found", strconv.FormatInt(wf, 10), "missing")
		}},
	}
}
