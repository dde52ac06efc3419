package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func sqliteClient(t *testing.T) *queuety.Client {
	t.Helper()
	c, err := queuety.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// recv waits for a value on ch, failing after a generous guard.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		require.FailNow(t, "timed out waiting for "+what)
	}
	var zero T
	return zero
}

// TestWebhooksRefreshWhileRunning: a running worker picks up a webhook
// added after it started at its next read of the table, and stops sending
// to one removed.
func TestWebhooksRefreshWhileRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := sqliteClient(t)
	posts := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- string(b)
	}))
	defer srv.Close()
	refreshed := make(chan int, 100)
	finished := make(chan int64, 10)
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond),
		worker.Webhooks(worker.WebhookOptions{Refresh: 10 * time.Millisecond, Allow: []string{"127.0.0.1"}}),
		worker.OnWebhooksRefreshed(func(n int) { refreshed <- n }),
		worker.WithHooks(worker.Hooks{Finished: func(j *driver.Job, _ error) { finished <- j.ID }}))
	w.HandleJob("send", func(context.Context, queuety.Payload) error { return nil })
	run := runWorker(t, w)

	assert.Equal(t, 0, recv(t, refreshed, "the first read"), "no webhooks at start")
	first, err := c.Dispatch(ctx, "send", nil)
	require.NoError(t, err)
	assert.Equal(t, first, recv(t, finished, "the first job"))

	hook, err := c.AddWebhook(ctx, queuety.WebhookJobCompleted, srv.URL)
	require.NoError(t, err)
	for recv(t, refreshed, "a read that finds the webhook") != 1 {
	}
	second, err := c.Dispatch(ctx, "send", nil)
	require.NoError(t, err)
	assert.Equal(t, second, recv(t, finished, "the second job"))
	body := recv(t, posts, "the POST")
	assert.Contains(t, body, `"event":"job.completed"`)
	assert.Contains(t, body, `"handler":"send"`)
	assert.Len(t, posts, 0, "the first job, done before the webhook existed, sent nothing")

	require.NoError(t, c.RemoveWebhook(ctx, hook.ID))
	for recv(t, refreshed, "a read without the webhook") != 0 {
	}
	third, err := c.Dispatch(ctx, "send", nil)
	require.NoError(t, err)
	assert.Equal(t, third, recv(t, finished, "the third job"))
	require.NoError(t, run.stop(t))
	assert.Len(t, posts, 0, "nothing sent after the webhook was removed")
}

// TestSlowWebhookEndpointNeverBlocksJobs: with an endpoint that does not
// answer, jobs still complete at full speed; POSTs beyond the senders and
// the bounded queue are dropped and logged, and what was queued is sent
// when the worker stops.
func TestSlowWebhookEndpointNeverBlocksJobs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := sqliteClient(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	_, err := c.AddWebhook(ctx, queuety.WebhookJobCompleted, srv.URL+"/hook?token=t0ps3cret")
	require.NoError(t, err)
	const jobs, senders, queued = 20, 2, 3
	for range jobs {
		_, err := c.Dispatch(ctx, "send", nil)
		require.NoError(t, err)
	}
	logs := &syncbuf.Buffer{}
	finished := make(chan struct{}, jobs)
	w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(4), worker.PollInterval(10*time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		worker.Webhooks(worker.WebhookOptions{Timeout: time.Minute, Senders: senders, QueueSize: queued, Drain: time.Minute, Allow: []string{"127.0.0.1"}}),
		worker.WithHooks(worker.Hooks{Finished: func(*driver.Job, error) { finished <- struct{}{} }}))
	w.HandleJob("send", func(context.Context, queuety.Payload) error { return nil })
	run := runWorker(t, w)
	for i := range jobs {
		recv(t, finished, "job "+strconv.Itoa(i))
	}
	for range senders {
		recv(t, arrived, "a POST the endpoint holds")
	}
	assert.Len(t, arrived, 0, "only the senders' POSTs reached the endpoint")
	assert.Equal(t, jobs-senders-queued, strings.Count(logs.String(), "the delivery queue is full"), "dropped POSTs are logged")
	assert.NotContains(t, logs.String(), "t0ps3cret", "without the URL's query string")

	release <- struct{}{} // let the held POSTs answer; the queued ones follow
	release <- struct{}{}
	run.cancel()
	for range queued {
		recv(t, arrived, "a queued POST sent while stopping")
		release <- struct{}{}
	}
	require.NoError(t, run.stop(t))
	assert.Len(t, arrived, 0, "dropped POSTs are never sent")
}

// TestWebhookFailuresAreLogged: an endpoint that is down or answers with
// an error is logged; the job is completed all the same.
func TestWebhookFailuresAreLogged(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer failing.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, u := range []string{failing.URL + "/hook", down.URL + "/hook"} {
		_, err := c.AddWebhook(ctx, queuety.WebhookJobBuried, u)
		require.NoError(t, err)
	}
	id, err := c.Dispatch(ctx, "fail", nil, queuety.MaxAttempts(1))
	require.NoError(t, err)
	logs := &syncbuf.Buffer{}
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	w.HandleJob("fail", func(context.Context, queuety.Payload) error { return errors.New("broken") })
	st, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Failed, "the attempt failed")
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status)
	out := logs.String()
	assert.Equal(t, 2, strings.Count(out, "webhook delivery failed"), "both failures logged:\n%s", out)
	assert.Contains(t, out, "500 Internal Server Error")
	assert.Contains(t, out, "event=job.buried")
}
