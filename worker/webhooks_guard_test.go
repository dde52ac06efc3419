package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/webhook"
	"github.com/queuety/queuety-go/worker"
)

// hookRequest is one request a test endpoint received.
type hookRequest struct {
	path   string
	header http.Header
	body   []byte
}

// hookEndpoint is a server on 127.0.0.1 that reports each request and
// answers with h (204 when h is nil).
func hookEndpoint(t *testing.T, h http.HandlerFunc) (*httptest.Server, chan hookRequest) {
	got := make(chan hookRequest, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- hookRequest{path: r.URL.Path, header: r.Header.Clone(), body: b}
		if h != nil {
			h(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// buryOne dispatches a job that fails for good and runs a worker with opts
// over it until it is done, returning the worker's log.
func buryOne(t *testing.T, c *queuety.Client, opts ...worker.Option) string {
	t.Helper()
	ctx := context.Background()
	_, err := c.Dispatch(ctx, "fail", nil, queuety.MaxAttempts(1))
	require.NoError(t, err)
	logs := &syncbuf.Buffer{}
	w := worker.New(c, append([]worker.Option{worker.NoMaintenance(), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))}, opts...)...)
	w.HandleJob("fail", func(context.Context, queuety.Payload) error { return errors.New("broken") })
	st, err := w.RunOnce(ctx, time.Minute) // returns after the queued POSTs are sent
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Failed)
	return logs.String()
}

// TestWebhooksRefuseInternalAddressesByDefault: with no allow-list, a
// worker sends nothing to the machine itself (by address, by a name that
// resolves to it, by 0.0.0.0 or the IPv4-mapped form), to the cloud
// metadata address or its name; each refusal is logged with what to do
// about it.
func TestWebhooksRefuseInternalAddressesByDefault(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	srv, got := hookEndpoint(t, nil)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	urls := []string{
		srv.URL + "/direct",
		"http://localhost:" + port + "/by-name",
		"http://0.0.0.0:" + port + "/unspecified",
		"http://[::ffff:127.0.0.1]:" + port + "/mapped",
		"http://169.254.169.254/latest/meta-data/",
		"http://metadata.google.internal/computeMetadata/v1/",
	}
	for _, u := range urls {
		_, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, u)
		require.NoError(t, err, "registering does not resolve: %s", u)
	}
	out := buryOne(t, c, worker.Webhooks(worker.WebhookOptions{Timeout: 5 * time.Second}))
	assert.Len(t, got, 0, "no POST reached the server on 127.0.0.1")
	assert.Equal(t, len(urls), strings.Count(out, "webhook delivery failed"), "each refusal logged:\n%s", out)
	assert.Equal(t, len(urls), strings.Count(out, "refused (allow it explicitly to send there)"), "as a refusal:\n%s", out)
	assert.Equal(t, len(urls), strings.Count(out, "webhook allow-list"), "with the hint:\n%s", out)
	for _, want := range []string{
		"127.0.0.1 is a loopback address", "localhost resolves to 127.0.0.1, a loopback address", "0.0.0.0 is a unspecified address",
		"169.254.169.254 is a link-local address", "metadata.google.internal is a cloud metadata service",
	} {
		assert.Contains(t, out, want)
	}
}

// TestWebhookAllowListOpensOnlyWhatItNames: an allow-list entry lets POSTs
// reach the address it names, by any name; other internal addresses stay
// refused; an entry that is not an address, a prefix or a name stops the
// worker before it claims anything.
func TestWebhookAllowListOpensOnlyWhatItNames(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	srv, got := hookEndpoint(t, nil)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	for _, u := range []string{srv.URL + "/direct", "http://localhost:" + port + "/by-name", "http://169.254.169.254/latest/"} {
		_, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, u)
		require.NoError(t, err)
	}
	out := buryOne(t, c, worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.0/8"}}))
	paths := []string{recv(t, got, "a POST").path, recv(t, got, "a POST").path}
	assert.ElementsMatch(t, []string{"/direct", "/by-name"}, paths)
	assert.Equal(t, 1, strings.Count(out, "webhook delivery failed"), out)
	assert.Contains(t, out, "169.254.169.254 is a link-local address")

	_, err := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()),
		worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1", "http://hooks.internal:8080"}})).RunOnce(ctx, time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `webhook allow-list: egress: allow-list entry "http://hooks.internal:8080" is not an IP address, a CIDR prefix or a host name`)
	err = worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()),
		worker.Webhooks(worker.WebhookOptions{Allow: []string{"*"}})).Run(ctx)
	require.Error(t, err, "Run refuses a bad entry too")
}

// TestWebhookRedirectIsNotFollowed: a receiver that answers 307 does not
// get the POST sent on (with its body) to where it points, not even to an
// address the allow-list names; the delivery is logged as failed, saying
// why, without the Location; no request carries a Referer.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	target, stolen := hookEndpoint(t, nil)
	redirector, got := hookEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal?key=l0cation", http.StatusTemporaryRedirect)
	})
	_, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, redirector.URL+"/hook")
	require.NoError(t, err)
	out := buryOne(t, c, worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	first := recv(t, got, "the POST to the registered URL")
	assert.Equal(t, "/hook", first.path)
	assert.Empty(t, first.header.Get("Referer"))
	assert.Len(t, stolen, 0, "the redirect is not followed")
	assert.Contains(t, out, "status 307 Temporary Redirect: redirects are not followed")
	assert.NotContains(t, out, "l0cation")
}

// TestWebhookLogsShowNoCredentials: failed deliveries, refusals and URLs
// that cannot be sent to are logged without the user info and query
// string of the URL, and never with the signing secret.
func TestWebhookLogsShowNoCredentials(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	failing, _ := hookEndpoint(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "nope", http.StatusInternalServerError) })
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	var secrets []string
	for _, u := range []string{
		strings.Replace(failing.URL, "http://", "http://user:hunter2@", 1) + "/hook?token=t0ps3cret",
		strings.Replace(down.URL, "http://", "http://h00ktoken@", 1) + "/hook?sig=t0ps3cret",
		"http://user:hunter2@169.254.169.254/?token=t0ps3cret",
	} {
		h, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, u)
		require.NoError(t, err)
		secrets = append(secrets, strings.TrimPrefix(h.Secret, webhook.SecretPrefix))
	}
	// A row as Queuety PHP (or a hand) could write it: not http at all.
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		return tx.WebhookInsert(ctx, &driver.Webhook{Event: queuety.WebhookJobBuried, URL: "ftp://user:hunter2@files.example/x?token=t0ps3cret", CreatedAt: time.Now()})
	}))
	out := buryOne(t, c, worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	assert.Equal(t, 3, strings.Count(out, "webhook delivery failed"), out)
	assert.Contains(t, out, "url=http://***@"+failing.Listener.Addr().String()+"/hook?***")
	assert.Contains(t, out, "500 Internal Server Error")
	assert.Contains(t, out, "webhook skipped: its URL cannot be sent to")
	assert.Contains(t, out, `ftp://***@files.example/x?***`)
	for _, secret := range append(secrets, "hunter2", "t0ps3cret", "h00ktoken") {
		assert.NotContains(t, out, secret)
	}
}

// TestWebhooksFromRowsWithoutSecret: a webhook row with no secret (as
// Queuety PHP writes them) is sent unsigned, as Queuety PHP sends it; once
// it is given a secret, its POSTs are signed with that secret. A row whose
// URL is not http or https is skipped and logged once, however often the
// worker reads the table, and the others are still sent.
func TestWebhooksFromRowsWithoutSecret(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	srv, got := hookEndpoint(t, nil)
	phpRow := &driver.Webhook{Event: queuety.WebhookJobBuried, URL: srv.URL + "/php", CreatedAt: time.Now()}
	for _, w := range []*driver.Webhook{phpRow, {Event: queuety.WebhookJobBuried, URL: "gopher://files.example/x", CreatedAt: time.Now()}} {
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.WebhookInsert(ctx, w) }))
	}
	hooks, err := c.Webhooks(ctx)
	require.NoError(t, err)
	assert.False(t, hooks[0].Signed, "listed as unsigned")

	opts := worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}})
	out := buryOne(t, c, opts)
	unsigned := recv(t, got, "the unsigned POST")
	for _, h := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
		assert.Empty(t, unsigned.header.Get(h), h)
	}
	assert.Equal(t, 1, strings.Count(out, "webhook skipped"), out)
	assert.Contains(t, out, `gopher://files.example/x`)

	secret, err := c.RotateWebhookSecret(ctx, phpRow.ID)
	require.NoError(t, err)
	before := time.Now()
	buryOne(t, c, opts)
	signed := recv(t, got, "the signed POST")
	require.NoError(t, webhook.Verify(secret, signed.header, signed.body, 0), "signed with the new secret, at the send time")
	ts, err := strconv.ParseInt(signed.header.Get(webhook.HeaderTimestamp), 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ts, before.Unix())
}
