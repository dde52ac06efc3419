package cli_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	out := mustRun(t, nil, "--dsn", dsn, "webhook", "add", "job.buried", "https://hooks.example.com/a")
	assert.Regexp(t, `^Webhook #1 registered for event 'job.buried'.\nSigning secret \(shown only now; give it to the receiver, which verifies each POST with it\):\nwhsec_[A-Za-z0-9+/]{43}=\n$`, out)
	firstSecret := strings.TrimSpace(out[strings.LastIndex(out, ":\n")+2:])
	added := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "webhook", "add", "workflow.failed", "http://user:hunter2@127.0.0.1:9/b?x=1", "--json"))
	secret, _ := added["secret"].(string)
	assert.Regexp(t, `^whsec_`, secret)
	assert.NotEqual(t, firstSecret, secret)
	delete(added, "secret")
	assert.Equal(t, map[string]any{"id": float64(2), "event": "workflow.failed", "url": "http://user:xxxxx@127.0.0.1:9/b?x=1"}, added,
		"the password is not echoed")

	listJSON := mustRun(t, nil, "--dsn", dsn, "webhook", "list", "--json")
	list := decode[[]map[string]any](t, listJSON)
	require.Len(t, list, 2)
	assert.Equal(t, "job.buried", list[0]["event"])
	assert.Equal(t, "https://hooks.example.com/a", list[0]["url"])
	assert.Equal(t, true, list[0]["signed"])
	assert.NotEmpty(t, list[0]["created_at"], "created_at")
	assert.Equal(t, "http://user:xxxxx@127.0.0.1:9/b?x=1", list[1]["url"])
	table := mustRun(t, nil, "--dsn", dsn, "webhook", "list")
	assert.Contains(t, table, "ID  EVENT")
	assert.Contains(t, table, "SIGNED")
	assert.Contains(t, table, "workflow.failed  http://user:xxxxx@127.0.0.1:9/b?x=1")
	for _, shown := range []string{listJSON, table} {
		assert.NotContains(t, shown, "whsec_", "the list never shows a secret")
		assert.NotContains(t, shown, "hunter2", "nor a password")
	}

	rotated := mustRun(t, nil, "--dsn", dsn, "webhook", "rotate-secret", "1")
	assert.Regexp(t, `^Webhook #1 has a new secret.\nSigning secret .*:\nwhsec_[A-Za-z0-9+/]{43}=\n$`, rotated)
	assert.NotContains(t, rotated, firstSecret)
	wantFail(t, 1, "webhook 9: not found", "--dsn", dsn, "webhook", "rotate-secret", "9")

	wantFail(t, 2, `unknown webhook event "job.done"`, "--dsn", dsn, "webhook", "add", "job.done", "https://x.example")
	bad := wantFail(t, 2, `webhook URL "ftp://***@x.example/?***" must start with http:// or https://`, "--dsn", dsn, "webhook", "add", "job.failed", "ftp://u:hunter2@x.example/?k=t0ps3cret")
	assert.NotContains(t, bad.stderr, "hunter2")
	assert.NotContains(t, bad.stderr, "t0ps3cret")
	wantFail(t, 2, "missing arguments", "--dsn", dsn, "webhook", "add", "job.failed")

	assert.Equal(t, "Webhook #1 removed.\n", mustRun(t, nil, "--dsn", dsn, "webhook", "remove", "1"))
	wantFail(t, 1, "webhook 1: not found", "--dsn", dsn, "webhook", "remove", "1")
	removed := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "webhook", "remove", "2", "--json"))
	assert.Equal(t, map[string]any{"id": float64(2), "removed": true}, removed)
	assert.Equal(t, "No webhooks registered.\n", mustRun(t, nil, "--dsn", dsn, "webhook", "list"))
	assert.Equal(t, "[]\n", mustRun(t, nil, "--dsn", dsn, "webhook", "list", "--json"))
}

// TestWebhookListHidesUnparsableURLs: a row whose URL does not parse (as
// Queuety PHP may store it) is listed without it, since its password
// cannot be found to hide it.
func TestWebhookListHidesUnparsableURLs(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c, err := queuety.Open(ctx, dsn)
	require.NoError(t, err)
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		return tx.WebhookInsert(ctx, &driver.Webhook{Event: "job.buried", URL: "http://user:hunter%zz@hooks.example.com/", CreatedAt: time.Now()})
	}))
	require.NoError(t, c.Close())
	for _, args := range [][]string{{"webhook", "list"}, {"webhook", "list", "--json"}} {
		out := mustRun(t, nil, append([]string{"--dsn", dsn}, args...)...)
		assert.Contains(t, out, "(a URL that does not parse)", args)
		assert.NotContains(t, out, "hunter", args)
	}
}

// TestWorkWebhookAllow: work and flush send to a receiver on 127.0.0.1 only
// when --webhook-allow (or QUEUETY_WEBHOOK_ALLOW) names it, and refuse an
// entry that is not an address, a prefix or a host name.
func TestWorkWebhookAllow(t *testing.T) {
	dsn := tempDSN(t)
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-signature")
	}))
	defer srv.Close()
	mustRun(t, nil, "--dsn", dsn, "webhook", "add", "job.buried", srv.URL+"/hook")
	reg := queuety.NewRegistry()
	reg.HandleJob("fail", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("no")) })
	bury := func(args ...string) {
		t.Helper()
		mustRun(t, nil, "--dsn", dsn, "dispatch", "fail")
		mustRun(t, reg, append([]string{"--dsn", dsn}, args...)...)
	}

	bury("work", "--once")
	assert.Len(t, got, 0, "loopback is refused by default")
	bury("flush", "--webhook-allow", "10.0.0.0/8, hooks.internal")
	assert.Len(t, got, 0, "an allow-list that does not name it")
	bury("work", "--once", "--webhook-allow", "127.0.0.1")
	assert.Regexp(t, `^v1,`, <-got, "allowed: the signed POST arrives")
	t.Setenv(cli.EnvWebhookAllow, "127.0.0.0/8")
	bury("flush")
	assert.Regexp(t, `^v1,`, <-got, "allowed through the environment")
	bury("work", "--once", "--webhook-allow", "")
	assert.Len(t, got, 0, "an empty flag overrides the environment")

	wantFail(t, 2, `--webhook-allow: allow-list entry "http://hooks.internal" is not an IP address, a CIDR prefix or a host name`,
		"--dsn", dsn, "work", "--once", "--webhook-allow", "127.0.0.1,http://hooks.internal")
	t.Setenv(cli.EnvWebhookAllow, "*.internal")
	wantFail(t, 2, cli.EnvWebhookAllow+`: allow-list entry "*.internal" is not`, "--dsn", dsn, "flush")
}

func TestWorkflowArtifactCommands(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "brief", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "draft"},
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
