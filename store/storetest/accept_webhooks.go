package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/webhook"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Webhooks/AddListRemoveValidate", testWebhookRows)
	register("Webhooks/WorkerPostsQueuetyBodies", testWebhookDelivery)
}

func testWebhookRows(t *testing.T, e *Env) {
	h1, err := e.C.AddWebhook(e.Ctx, queuety.WebhookJobBuried, "https://hooks.example.com/services/T0/B0")
	require.NoError(t, err)
	h2, err := e.C.AddWebhook(e.Ctx, queuety.WebhookWorkflowFailed, "http://127.0.0.1:8080/queuety?x=1")
	require.NoError(t, err)
	id1, id2 := h1.ID, h2.ID
	assert.Greater(t, id2, id1, "ids ascend")
	assert.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, h1.Secret, "a new webhook gets a 32-byte secret")
	assert.NotEqual(t, h1.Secret, h2.Secret, "each webhook its own")
	assert.True(t, h1.Signed)
	hooks, err := e.C.Webhooks(e.Ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 2)
	assert.Equal(t, queuetytype.Webhook{ID: id1, Event: "job.buried", URL: "https://hooks.example.com/services/T0/B0", CreatedAt: Epoch, Signed: true}, *hooks[0],
		"row as stored, created at the client's clock; the list never returns the secret")
	assert.Equal(t, "workflow.failed", hooks[1].Event)

	rotated, err := e.C.RotateWebhookSecret(e.Ctx, id1)
	require.NoError(t, err)
	assert.Regexp(t, `^whsec_`, rotated)
	assert.NotEqual(t, h1.Secret, rotated, "a new secret")
	_, err = e.C.RotateWebhookSecret(e.Ctx, id2+100)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "rotating a webhook that does not exist")

	for _, bad := range []struct{ event, url, want string }{
		{"job.done", "https://x.example", `unknown webhook event "job.done" (known: job.completed, job.failed, job.buried, workflow.failed)`},
		{"", "https://x.example", "unknown webhook event"},
		{"job.failed", "ftp://x.example/a", "must start with http:// or https://"},
		{"job.failed", "ftp://user:hunter2@x.example/a?token=t0ps3cret", `webhook URL "ftp://***@x.example/a?***" must start with http:// or https://`},
		{"job.failed", "http://user:hunter2@x.example:port/?token=t0ps3cret", "webhook URL does not parse"},
		{"job.failed", "/relative", "must start with http:// or https://"},
		{"job.failed", "https://", "has no host"},
		{"job.failed", " https://x.example", "surrounding spaces"},
		{"job.failed", "https://x.example/" + string(make([]byte, queuety.MaxWebhookURLLength)), "the limit is 2048"},
	} {
		_, err := e.C.AddWebhook(e.Ctx, bad.event, bad.url)
		require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "%q %q", bad.event, bad.url)
		assert.Contains(t, err.Error(), bad.want, "%q %q", bad.event, bad.url)
		assert.NotContains(t, err.Error(), "hunter2", "no password in the error")
		assert.NotContains(t, err.Error(), "t0ps3cret", "no query string in the error")
	}
	hooks, err = e.C.Webhooks(e.Ctx)
	require.NoError(t, err)
	assert.Len(t, hooks, 2, "invalid webhooks write nothing")

	require.NoError(t, e.C.RemoveWebhook(e.Ctx, id1))
	assert.ErrorIs(t, e.C.RemoveWebhook(e.Ctx, id1), queuetytype.ErrNotFound, "removing twice")
	hooks, err = e.C.Webhooks(e.Ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 1)
	assert.Equal(t, id2, hooks[0].ID, "the other webhook stays")
}

// received is one POST a test endpoint received.
type received struct {
	path, method, contentType, userAgent string
	header                               http.Header
	body                                 []byte
}

// webhookEndpoint is an HTTP server that reports every request on a
// channel before answering 204.
func webhookEndpoint(t *testing.T) (*httptest.Server, chan received) {
	got := make(chan received, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{path: r.URL.Path, method: r.Method, contentType: r.Header.Get("Content-Type"), userAgent: r.Header.Get("User-Agent"),
			header: r.Header.Clone(), body: body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// testWebhookDelivery runs a worker over a plain job that completes, a job
// that fails once and is then buried, and a workflow whose second step
// fails for good, with webhooks for all four events (two URLs for
// job.buried), and checks each POST's body byte for byte against what
// Queuety PHP's WebhookNotifier sends, and its Standard Webhooks
// signature with its own webhook's secret. The endpoint listens on
// 127.0.0.1, which the worker reaches only because its allow-list names it.
func testWebhookDelivery(t *testing.T, e *Env) {
	srv, got := webhookEndpoint(t)
	secrets := map[string]string{} // path → secret
	for _, h := range [][2]string{
		{queuety.WebhookJobCompleted, "/completed"}, {queuety.WebhookJobFailed, "/failed"}, {queuety.WebhookJobBuried, "/buried"},
		{queuety.WebhookJobBuried, "/buried-2"}, {queuety.WebhookWorkflowFailed, "/workflow-failed"},
	} {
		hook, err := e.C.AddWebhook(e.Ctx, h[0], srv.URL+h[1])
		require.NoError(t, err)
		secrets[h[1]] = hook.Secret
	}
	okID := e.Dispatch(`App\Jobs\Ok`, nil)
	flakyID := e.Dispatch("flaky", nil, queuety.OnQueue("mail"), queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	wfID := e.startB(builder.Workflow("import").Then("fine").Then("boom"), nil)

	w := e.Worker(nil, worker.Queues("default", "mail"), worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	var attempts atomic.Int64
	w.HandleJob(`App\Jobs\Ok`, func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("flaky", func(context.Context, queuety.Payload) error {
		return fmt.Errorf("smtp/down %d", attempts.Add(1))
	})
	w.HandleStep("fine", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	w.HandleStep("boom", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, queuety.NonRetryable(errors.New(`api "limit" reached`))
	})
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(wfID).Status, "the workflow failed")
	boomJob := e.OneJob(driver.JobFilter{WorkflowID: wfID, Handler: "boom"})

	// RunOnce returns after sending what it queued: every POST is in.
	const want = 7
	posts := make([]received, 0, want)
	for range want {
		select {
		case r := <-got:
			posts = append(posts, r)
		case <-time.After(30 * time.Second):
			require.FailNow(t, "webhook POSTs missing", "got %d of %d", len(posts), want)
		}
	}
	select {
	case r := <-got:
		require.FailNow(t, "an unexpected POST", "%s %s", r.path, r.body)
	default:
	}
	ids := map[string]bool{}
	for _, p := range posts {
		assert.Equal(t, http.MethodPost, p.method, p.path)
		assert.Equal(t, "application/json", p.contentType, p.path)
		assert.Equal(t, "queuety-go", p.userAgent, p.path)
		id := p.header.Get(webhook.HeaderID)
		assert.Regexp(t, `^msg_[A-Z2-7]{26}$`, id, p.path)
		assert.False(t, ids[id], "each POST has its own id")
		ids[id] = true
		assert.Equal(t, strconv.FormatInt(e.Clock.Now().Unix(), 10), p.header.Get(webhook.HeaderTimestamp), "the send time, by the client's clock")
		want, err := webhook.Sign(secrets[p.path], id, e.Clock.Now(), p.body)
		require.NoError(t, err)
		assert.Equal(t, want, p.header.Get(webhook.HeaderSignature), "signed with the secret of the webhook posted to (%s)", p.path)
		for path, other := range secrets {
			if path != p.path {
				assert.Error(t, webhookVerifyAt(other, p, e.Clock.Now()), "another webhook's secret does not verify")
			}
		}
		require.NoError(t, webhookVerifyAt(secrets[p.path], p, e.Clock.Now()), p.path)
	}
	const ts = `"timestamp":"2030-01-02T03:04:05Z"}`
	var done struct {
		Data struct {
			DurationMS *int64 `json:"duration_ms"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(bodyOf(posts, "/completed", 0)), &done), "job.completed body")
	require.NotNil(t, done.Data.DurationMS, "duration_ms")
	buried := fmt.Sprintf(`{"event":"job.buried","data":{"job_id":%d,"handler":"flaky","queue":"mail","error_message":"smtp\/down 2"},`+ts, flakyID)
	buriedStep := fmt.Sprintf(`{"event":"job.buried","data":{"job_id":%d,"handler":"boom","queue":"default","error_message":"api \"limit\" reached"},`+ts, boomJob.ID)
	assert.ElementsMatch(t, []string{buried, buriedStep}, []string{bodyOf(posts, "/buried", 0), bodyOf(posts, "/buried", 1)},
		"job.buried: a plain job and a workflow step")
	assert.ElementsMatch(t, []string{buried, buriedStep}, []string{bodyOf(posts, "/buried-2", 0), bodyOf(posts, "/buried-2", 1)},
		"the second job.buried URL gets the same bodies")
	assert.Equal(t, fmt.Sprintf(`{"event":"job.completed","data":{"job_id":%d,"handler":"App\\Jobs\\Ok","queue":"default","duration_ms":%d},`+ts,
		okID, *done.Data.DurationMS), bodyOf(posts, "/completed", 0), "job.completed (only the plain job; workflow steps send none)")
	assert.Equal(t, fmt.Sprintf(`{"event":"job.failed","data":{"job_id":%d,"handler":"flaky","queue":"mail","attempt":1,"error_message":"smtp\/down 1"},`+ts,
		flakyID), bodyOf(posts, "/failed", 0), "job.failed, for the attempt that is retried")
	assert.Equal(t, fmt.Sprintf(`{"event":"workflow.failed","data":{"workflow_id":%d,"job_id":%d,"handler":"boom","error_message":"api \"limit\" reached"},`+ts,
		wfID, boomJob.ID), bodyOf(posts, "/workflow-failed", 0), "workflow.failed")
}

// webhookVerifyAt runs webhook.Verify on a POST as a receiver whose clock
// reads now would (the test's clock is fake; Verify reads the wall clock).
func webhookVerifyAt(secret string, p received, now time.Time) error {
	return webhook.Verify(secret, p.header, p.body, time.Since(now).Abs()+time.Minute)
}

// bodyOf returns the body of the n-th POST to path, or "".
func bodyOf(posts []received, path string, n int) string {
	for _, p := range posts {
		if p.path != path {
			continue
		}
		if n == 0 {
			return string(p.body)
		}
		n--
	}
	return ""
}
