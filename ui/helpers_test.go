package ui

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// eachStore runs fn once on a fresh MySQL prefix (skipped, or failed under
// CI=true, when the server is unreachable) and once on a SQLite file.
func eachStore(t *testing.T, fn func(t *testing.T, c *queuety.Client)) {
	for _, name := range []string{"mysql", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			fn(t, openStore(t, name))
		})
	}
}

// openStore opens a migrated, empty store and closes it after the test.
func openStore(t *testing.T, name string) *queuety.Client {
	t.Helper()
	var dsn string
	if name == "mysql" {
		dsn, _ = migrated.DSN(t)
		// No cross-process wake-up: its background sends would run on
		// the pool's connection and be counted by the statement-count
		// tests. No test here has a worker in another process.
		dsn += "&wake=false" // migrated.DSN carries parameters already
	} else {
		dsn = "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
	}
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fixture is a store with real data that a worker produced.
type fixture struct {
	c        *queuety.Client
	mailJobs []int64 // completed plain jobs on queue "mail"
	buried   int64   // a plain job buried after its only attempt failed
	delayed  int64   // a pending job due in an hour
	waiting  int64   // a workflow waiting for the signal "shipped"
	approval int64   // a workflow waiting for approval
	failed   int64   // a workflow whose second step failed
	done     int64   // a completed workflow
	schedule int64   // an enabled hourly schedule
}

// seed dispatches jobs, workflows and a schedule and runs a worker until
// nothing is due, so every row was written by the engine itself.
func seed(t *testing.T, c *queuety.Client) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{c: c}
	for i := range 6 {
		id, err := c.Dispatch(ctx, "email.send", queuety.State{"to": "user" + string(rune('a'+i)) + "@example.com"}, queuety.OnQueue("mail"))
		require.NoError(t, err)
		f.mailJobs = append(f.mailJobs, id)
	}
	var err error
	f.buried, err = c.Dispatch(ctx, "report.build", queuety.State{"report": "monthly"}, queuety.MaxAttempts(1))
	require.NoError(t, err)
	f.delayed, err = c.Dispatch(ctx, "email.send", queuety.State{"to": "later@example.com"}, queuety.OnQueue("mail"), queuety.Delay(time.Hour))
	require.NoError(t, err)

	order := builder.Workflow("order.fulfil").Then("order.reserve").Then("order.charge").WaitForSignal("shipped").Then("order.notify")
	f.waiting, err = order.Dispatch(ctx, c, queuety.State{"order": 1001})
	require.NoError(t, err)
	f.approval, err = builder.Workflow("refund.review").Then("order.reserve").WaitForApproval().Then("order.notify").
		Dispatch(ctx, c, queuety.State{"order": 1002})
	require.NoError(t, err)
	f.failed, err = builder.Workflow("order.fulfil").Then("order.reserve").Then("order.explode", builder.Retry(1)).
		Dispatch(ctx, c, queuety.State{"order": 1003})
	require.NoError(t, err)
	f.done, err = builder.Workflow("order.quick").Then("order.reserve").Then("order.notify").Dispatch(ctx, c, queuety.State{"order": 1004})
	require.NoError(t, err)
	f.schedule, err = c.Schedule("cleanup.sessions", queuety.State{"older_than_days": 30}).Every(time.Hour).OnQueue("maintenance").Save(ctx)
	require.NoError(t, err)

	runWorker(t, c)
	f.requireStatus(t)
	return f
}

// runWorker runs a worker with the fixture's handlers until nothing is due.
func runWorker(t *testing.T, c *queuety.Client) {
	t.Helper()
	w := worker.New(c, worker.Queues("default", "mail", "maintenance"), worker.Concurrency(4), worker.WithLogger(quiet()),
		worker.PollInterval(10*time.Millisecond))
	w.HandleJob("email.send", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("cleanup.sessions", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("report.build", func(context.Context, queuety.Payload) error { return errors.New("disk full") })
	w.HandleStep("order.reserve", func(_ context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"reserved": true}, nil
	})
	w.HandleStep("order.charge", func(_ context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"charged_cents": 4200}, nil
	})
	w.HandleStep("order.notify", func(_ context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"notified": true}, nil
	})
	w.HandleStep("order.explode", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, errors.New("payment gateway down")
	})
	_, err := w.RunOnce(context.Background(), time.Minute)
	require.NoError(t, err)
}

// requireStatus checks that the worker left the rows as the tests expect.
func (f *fixture) requireStatus(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	j, err := f.c.Job(ctx, f.buried)
	require.NoError(t, err)
	require.Equal(t, queuetytype.JobBuried, j.Status)
	for id, want := range map[int64]queuetytype.WorkflowStatus{f.waiting: queuetytype.WorkflowWaitingForSignal,
		f.approval: queuetytype.WorkflowWaitingForSignal, f.failed: queuetytype.WorkflowFailed, f.done: queuetytype.WorkflowCompleted} {
		wf, err := f.c.Workflow(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, wf.Status, "workflow %d", id)
	}
}

// browser is an HTTP client with a cookie jar, like a browser: it keeps
// the CSRF and session cookies, and reads the CSRF token from pages.
type browser struct {
	t    *testing.T
	srv  *httptest.Server
	hc   *http.Client
	csrf string
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, srv: srv, hc: hc}
}

// response is a read response.
type response struct {
	*http.Response
	body string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// do sends a request with optional headers and remembers the CSRF token
// of the page it gets.
func (b *browser) do(method, path string, form url.Values, header http.Header) *response {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	if m := csrfField.FindStringSubmatch(string(raw)); m != nil {
		b.csrf = m[1]
	}
	return &response{Response: res, body: string(raw)}
}

func (b *browser) get(path string) *response { return b.do(http.MethodGet, path, nil, nil) }

// post sends a form with the CSRF token of the last page (a GET of the
// overview first when there is none yet).
func (b *browser) post(path string, form url.Values) *response {
	b.t.Helper()
	if b.csrf == "" {
		b.get("/")
		require.NotEmpty(b.t, b.csrf, "no CSRF token on the overview")
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.do(http.MethodPost, path, form, nil)
}

// testToken is a token strong enough for Options.Token.
const testToken = "tok-3f9a1c7e5b2d8046"

// open is the configuration of a UI that needs no authentication.
var open = Options{AllowUnauthenticated: true, Logger: quiet()}

// pausedQueues returns the names of the paused queues.
func pausedQueues(t *testing.T, c *queuety.Client) []string {
	t.Helper()
	states, err := c.QueueStates(context.Background())
	require.NoError(t, err)
	var out []string
	for _, s := range states {
		if s.Paused {
			out = append(out, s.Queue)
		}
	}
	return out
}

func jobStatus(t *testing.T, c *queuety.Client, id int64) driver.JobStatus {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

func workflowStatus(t *testing.T, c *queuety.Client, id int64) driver.WorkflowStatus {
	t.Helper()
	wf, err := c.Workflow(context.Background(), id)
	require.NoError(t, err)
	return wf.Status
}

// spreadWork has workers finish jobs over the last minutes, one batch a
// minute, on a fake clock that starts that many minutes ago: the log rows
// the overview's throughput reads are spread over its window. It also
// leaves one job, for a handler no worker has, due since the first
// minute on queue "images".
func spreadWork(t *testing.T, c *queuety.Client, minutes int) {
	t.Helper()
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Now().Add(-time.Duration(minutes) * time.Minute))
	past := clientseam.NewClient(clientseam.StoreOf(c), queuety.WithClock(clock), queuety.WithLogger(quiet())).(*queuety.Client) // not closed: it shares c's store
	_, err := past.Dispatch(ctx, "image.resize", queuety.State{"w": 640}, queuety.OnQueue("images"))
	require.NoError(t, err)
	for i := range minutes {
		var reqs []queuety.JobRequest
		for j := range 2 + (i*7)%9 {
			reqs = append(reqs, queuety.JobRequest{Handler: "email.send", Payload: queuety.State{"n": i*100 + j},
				Options: []queuety.JobOption{queuety.OnQueue("mail")}})
		}
		_, err := past.DispatchMany(ctx, reqs)
		require.NoError(t, err)
		runWorker(t, past)
		clock.Advance(time.Minute)
	}
}
