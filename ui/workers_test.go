package ui

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestWorkersPage: the workers page lists a running worker with its
// queues, handlers and the job it runs (linked to the job's page) and a
// worker that stopped renewing as gone; the menu links to it; it needs
// the UI's credentials like every page.
func TestWorkersPage(t *testing.T) {
	eachStore(t, func(t *testing.T, store *queuety.Client) {
		ctx := context.Background()
		// A clock that stands still: the worker's renewals are never
		// older than the page's now, however slowly the test runs.
		now := time.Now().UTC().Truncate(time.Second)
		// (Not closed: it shares the store, which eachStore closes.)
		c := clientseam.NewClient(clientseam.StoreOf(store), queuety.WithClock(queuety.NewFakeClock(now)),
			queuety.WithLogger(quiet())).(*queuety.Client)
		gone := &queuetytype.Worker{ID: "old-host-77-abcdef", Host: "old-host", PID: 77, Version: "v0.0.9", Queues: []string{"default"},
			Concurrency: 2, HeartbeatInterval: 3 * time.Second, StartedAt: now.Add(-time.Hour), LastHeartbeat: now.Add(-10 * time.Minute)}
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.WorkerSave(ctx, gone) }))

		release := make(chan struct{})
		w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.Queues("mail"), worker.Concurrency(4),
			worker.LeaseInterval(50*time.Millisecond), worker.PollInterval(10*time.Millisecond))
		w.HandleJob("send_<mail>", func(context.Context, queuety.Payload) error { <-release; return nil })
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		defer func() {
			close(release)
			cancel()
			assert.NoError(t, <-done)
		}()
		id, err := c.Dispatch(ctx, "send_<mail>", nil, queuety.OnQueue("mail"))
		require.NoError(t, err)
		var live *queuetytype.Worker
		require.Eventually(t, func() bool {
			ws, err := c.Workers(ctx)
			if err != nil {
				return false
			}
			i := slices.IndexFunc(ws, func(w *queuetytype.Worker) bool { return w.PID == os.Getpid() })
			if i < 0 || !slices.Equal(ws[i].Jobs, []int64{id}) {
				return false
			}
			live = ws[i]
			return true
		}, 30*time.Second, 10*time.Millisecond, "the registry does not list the worker with its job")

		b := newBrowser(t, Handler(c, open))
		res := b.get("/workers")
		require.Equal(t, http.StatusOK, res.StatusCode, res.body)
		for _, want := range []string{
			`id="workers"`, `<a href="/workers" class="on" aria-current="page">Workers</a>`, "1 live, 1 gone",
			fmt.Sprintf(`data-worker="%s"`, live.ID), `<span class="badge s-live">live</span>`, `<a href="/jobs?queue=mail">mail</a>`,
			html.EscapeString("send_<mail>"), fmt.Sprintf(`<a href="/jobs/%d">%d</a>`, id, id), "1 / 4", html.EscapeString(strings.SplitN(queuety.Version(), "+", 2)[0]), // html/template writes + as &#43;
			`data-worker="old-host-77-abcdef"`, "old-host", `<span class="badge s-gone">gone</span>`, "v0.0.9",
		} {
			assert.Contains(t, res.body, want)
		}
		assert.NotContains(t, res.body, "send_<mail>", "handler names are escaped")
		assert.Contains(t, b.get("/workers?partial=1").body, fmt.Sprintf(`data-worker="%s"`, live.ID), "the live refresh")
		assert.Contains(t, b.get("/").body, `<a href="/workers">Workers</a>`, "the menu")

		locked := newBrowser(t, Handler(c, Options{Token: "s3cret-token-for-the-workers-page", Logger: quiet()}))
		res = locked.get("/workers")
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.NotContains(t, res.body, live.ID)
	})
}

// TestWorkersPageEmpty: with no worker registered the page says so.
func TestWorkersPageEmpty(t *testing.T) {
	b := newBrowser(t, Handler(openStore(t, "sqlite"), open))
	res := b.get("/workers")
	require.Equal(t, http.StatusOK, res.StatusCode, res.body)
	assert.Contains(t, res.body, "No workers registered.")
	assert.Contains(t, res.body, "0 live, 0 gone")
}
