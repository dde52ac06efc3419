package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
)

// TestNewPagesNeedCredentials checks that the charts, batches, webhooks
// and artifact views answer 401 without credentials and serve them with
// the token, and that their actions are refused without it.
func TestNewPagesNeedCredentials(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	batch, err := c.NewBatch(queuety.JobRequest{Handler: "x"}).Dispatch(ctx)
	require.NoError(t, err)
	wf, err := builder.Workflow("w").Then("a").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	require.NoError(t, c.PutArtifact(ctx, wf, "notes", "secret notes", queuety.ArtifactKind("text")))
	hook, err := c.AddWebhook(ctx, queuety.WebhookJobFailed, "https://hooks.example.com/x")
	require.NoError(t, err)

	h := Handler(c, Options{Token: testToken, Logger: quiet()})
	anon := newBrowser(t, h)
	authed := newBrowser(t, h)
	bearer := http.Header{"Authorization": {"Bearer " + testToken}}
	for _, path := range []string{"/charts", "/charts?window=7d", "/batches", fmt.Sprintf("/batches/%d", batch), "/webhooks",
		fmt.Sprintf("/workflows/%d/artifacts/1", wf)} {
		res := anon.get(path)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, path)
		assert.NotContains(t, res.body, "secret notes", path)
		assert.Equal(t, http.StatusOK, authed.do(http.MethodGet, path, nil, bearer).StatusCode, path)
	}
	for _, path := range []string{fmt.Sprintf("/batches/%d/cancel", batch), fmt.Sprintf("/webhooks/%d/remove", hook.ID)} {
		assert.Equal(t, http.StatusUnauthorized, anon.do(http.MethodPost, path, url.Values{}, nil).StatusCode, path)
		assert.Equal(t, http.StatusForbidden, authed.do(http.MethodPost, path, url.Values{}, bearer).StatusCode, "%s without a CSRF token", path)
	}
	b, err := c.Batch(ctx, batch)
	require.NoError(t, err)
	assert.False(t, b.Cancelled())
	hooks, err := c.Webhooks(ctx)
	require.NoError(t, err)
	assert.Len(t, hooks, 1)
}
