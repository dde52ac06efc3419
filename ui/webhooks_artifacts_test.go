package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
)

// TestWebhooksBrowser lists webhooks in headless Chromium on both
// stores, checks that no page shows a secret, and removes one.
func TestWebhooksBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		a, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, "https://hooks.example.com/queuety/buried?team=ops")
		require.NoError(t, err)
		b, err := c.AddWebhook(ctx, queuety.WebhookWorkflowFailed, "https://hooks.example.com/queuety/workflows")
		require.NoError(t, err)
		rotated, err := c.RotateWebhookSecret(ctx, b.ID)
		require.NoError(t, err)
		require.NotEmpty(t, a.Secret)
		secrets := []string{a.Secret, b.Secret, rotated}

		p := newPageSession(t, c, Options{RefreshInterval: -1})
		p.open("/webhooks", "#webhooks")
		row := fmt.Sprintf(`#webhooks tr[data-webhook="%d"]`, a.ID)
		assert.Contains(t, p.text(row), "job.buried")
		assert.Contains(t, p.text(row), "https://hooks.example.com/queuety/buried?team=ops")
		assert.Contains(t, p.text(row), "signed")
		ctxTO, cancel := context.WithTimeout(p.browser, 30e9)
		html, err := chromedp.Run(ctxTO, chromedp.OuterHTML(chromedp.CSS("html")))
		cancel()
		require.NoError(t, err)
		for _, s := range secrets {
			assert.NotContains(t, html, s, "a secret on the webhooks page")
		}
		p.shot("webhooks")

		form := fmt.Sprintf(`%s form[action$="/webhooks/%d/remove"]`, row, a.ID)
		p.step("remove the webhook",
			chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(form+".armed")),
			chromedp.Click(chromedp.CSS(form+" button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS("#flash")))
		list, err := c.Webhooks(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, b.ID, list[0].ID)
		assert.Empty(t, p.attrs(row))

		// No page of the UI shows a secret.
		hb := newBrowser(t, Handler(c, open))
		for _, path := range []string{"/", "/webhooks", "/jobs", "/workflows", "/workers", "/batches", "/charts"} {
			res := hb.get(path)
			require.Equal(t, http.StatusOK, res.StatusCode, path)
			for _, s := range secrets {
				assert.False(t, strings.Contains(res.body, s), "a secret on %s", path)
			}
		}
	})
}

// TestArtifactsBrowser lists a workflow's artifacts on its page in
// headless Chromium on both stores and opens one whose content is
// markup: it is served as plain text, never run.
func TestArtifactsBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		id, err := builder.Workflow("report").Then("report.build").Dispatch(ctx, c, queuety.State{})
		require.NoError(t, err)
		const markup = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`
		require.NoError(t, c.PutArtifact(ctx, id, "summary.md", markup, queuety.ArtifactKind("markdown")))
		require.NoError(t, c.PutArtifact(ctx, id, `../../etc/"passwd"; x=1`, map[string]any{"rows": 17}))

		p := newPageSession(t, c, Options{RefreshInterval: -1})
		p.open(fmt.Sprintf("/workflows/%d", id), "#artifacts")
		rows := p.attrs("#artifacts tbody tr")
		require.Len(t, rows, 2)
		assert.Contains(t, p.text("#artifacts"), "summary.md")
		assert.Contains(t, p.text("#artifacts"), "markdown")
		assert.Contains(t, p.text("#artifacts"), fmt.Sprintf("%d B", len(markup)))
		p.shot("workflow-artifacts")

		link := p.attrs(`#artifacts td a[href*="/artifacts/"]`)
		var href string
		for _, l := range link {
			if strings.HasSuffix(p.text(fmt.Sprintf(`#artifacts a[href="%s"]`, l["href"])), "summary.md") {
				href = l["href"]
			}
		}
		require.NotEmpty(t, href)
		p.step("open the artifact", chromedp.Navigate(p.url+href), chromedp.WaitVisible(chromedp.CSS("pre")))
		assert.Equal(t, markup, p.text("pre"), "the markup is shown as text")
		ctxTO, cancel := context.WithTimeout(p.browser, 30e9)
		title, err := chromedp.Run(ctxTO, chromedp.Title())
		cancel()
		require.NoError(t, err)
		assert.NotEqual(t, "pwned", title, "the artifact's script did not run")
	})
}

// TestArtifactContentIsPlainAndBounded checks the artifact view's
// headers, its file names, and that a content past artifactBytes is
// refused without being read whole.
func TestArtifactContentIsPlainAndBounded(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	id, err := builder.Workflow("report").Then("a").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	other, err := builder.Workflow("other").Then("a").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	require.NoError(t, c.PutArtifact(ctx, id, `../../etc/"passwd"; x=1`, "<b>hi</b>", queuety.ArtifactKind("text")))
	require.NoError(t, c.PutArtifact(ctx, id, "big.json", bigString(artifactBytes+(64<<10))))

	b := newBrowser(t, Handler(c, open))
	page := b.get(fmt.Sprintf("/workflows/%d", id))
	require.Equal(t, http.StatusOK, page.StatusCode)
	ids := map[string]string{}
	for _, key := range []string{"big.json", "passwd"} {
		i := strings.Index(page.body, key)
		require.Positive(t, i, key)
		j := strings.LastIndex(page.body[:i], "/artifacts/")
		require.Positive(t, j)
		rest := page.body[j+len("/artifacts/"):]
		ids[key] = rest[:strings.IndexByte(rest, '"')]
	}

	res := b.get(fmt.Sprintf("/workflows/%d/artifacts/%s?download=1", id, ids["passwd"]))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "<b>hi</b>", res.body)
	assert.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, fmt.Sprintf(`attachment; filename="workflow-%d-_._.._etc__passwd___x_1.txt"`, id), res.Header.Get("Content-Disposition"))
	res = b.get(fmt.Sprintf("/workflows/%d/artifacts/%s", id, ids["passwd"]))
	assert.True(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), "inline; "), res.Header.Get("Content-Disposition"))

	var big *response
	n := allocated(func() { big = b.get(fmt.Sprintf("/workflows/%d/artifacts/%s", id, ids["big.json"])) })
	assert.Equal(t, http.StatusRequestEntityTooLarge, big.StatusCode)
	assert.Less(t, n, uint64(artifactBytes), "a refused content is not read")
	assert.True(t, strings.Contains(big.body, "more than this view serves"), "the refusal says why")

	assert.Equal(t, http.StatusNotFound, b.get(fmt.Sprintf("/workflows/%d/artifacts/%s", other, ids["passwd"])).StatusCode,
		"another workflow's artifact")
	assert.Equal(t, http.StatusBadRequest, b.get(fmt.Sprintf("/workflows/%d/artifacts/x1", id)).StatusCode)
}
