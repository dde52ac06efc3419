package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/store/sqlite"
)

// allocated returns how many bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bigString is a JSON string of about n bytes, with multi-byte characters.
func bigString(n int) string {
	return strings.Repeat("payload-€-", n/12)
}

// TestOverviewReadsNoPayloads fills a queue with large pending jobs and
// checks that an overview allocates a small fraction of their size, and
// (on MySQL) that it runs as many statements with thirty queues as with
// one.
func TestOverviewReadsNoPayloads(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		const jobs, size = 4, 1 << 20
		for range jobs {
			_, err := c.Dispatch(ctx, "import", queuety.State{"blob": bigString(size)}, queuety.OnQueue("big"))
			require.NoError(t, err)
		}
		b := newBrowser(t, Handler(c, open))
		require.Equal(t, http.StatusOK, b.get("/").StatusCode)
		var res *response
		n := allocated(func() { res = b.get("/") })
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, res.body, `data-queue="big"`)
		t.Logf("an overview allocated %d KiB with %d pending jobs of %d KiB", n>>10, jobs, size>>10)
		assert.Less(t, n, uint64(size), "an overview allocates less than one payload's size")

		ms, ok := clientseam.StoreOf(c).(*mysql.Store)
		if !ok {
			return
		}
		one := testdb.CountStatements(t, ms.DB, func() { require.Equal(t, http.StatusOK, b.get("/").StatusCode) })
		for i := range 30 {
			_, err := c.Dispatch(ctx, "h", nil, queuety.OnQueue(fmt.Sprintf("q%02d", i)))
			require.NoError(t, err)
		}
		thirty := testdb.CountStatements(t, ms.DB, func() { require.Equal(t, http.StatusOK, b.get("/").StatusCode) })
		t.Logf("statements per overview: %d with one queue, %d with thirty-one", one, thirty)
		assert.Equal(t, one, thirty, "statements per overview")
	})
}

// TestOverviewListsBoundedQueues checks that the overview lists at most
// maxOverviewQueues queues and says how many more there are.
func TestOverviewListsBoundedQueues(t *testing.T) {
	c := openStore(t, "sqlite")
	var reqs []queuety.JobRequest
	for i := range maxOverviewQueues + 5 {
		reqs = append(reqs, queuety.JobRequest{Handler: "h", Options: []queuety.JobOption{queuety.OnQueue(fmt.Sprintf("q%03d", i))}})
	}
	_, err := c.DispatchMany(context.Background(), reqs)
	require.NoError(t, err)
	res := newBrowser(t, Handler(c, open)).get("/")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, maxOverviewQueues, strings.Count(res.body, "<tr data-queue="), "queue rows")
	has := func(s string) bool { return strings.Contains(res.body, s) }
	assert.True(t, has(`data-queue="q099"`), "the 100th queue is listed")
	assert.False(t, has(`data-queue="q100"`), "the 101st queue is not listed")
	assert.True(t, has("5 more queues are not listed"), "the page says how many more queues there are")
	assert.True(t, has(fmt.Sprintf(`id="total-pending">%d<`, maxOverviewQueues+5)), "the totals count every queue")
}

// TestLargeValuesAreCut checks that the job and workflow pages show the
// beginning of a large payload or state with a link to the whole, and
// that the link streams the stored value exactly.
func TestLargeValuesAreCut(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		big := bigString(5 << 19)
		jobID, err := c.Dispatch(ctx, "import", queuety.State{"blob": big})
		require.NoError(t, err)
		wfID, err := builder.Workflow("w").Then("a").Dispatch(ctx, c, queuety.State{"blob": big})
		require.NoError(t, err)
		small, err := c.Dispatch(ctx, "import", queuety.State{"n": 1})
		require.NoError(t, err)

		b := newBrowser(t, Handler(c, open))
		var res *response
		n := allocated(func() { res = b.get(fmt.Sprintf("/jobs/%d", jobID)) })
		require.Equal(t, http.StatusOK, res.StatusCode)
		t.Logf("the job page of a %d KiB payload allocated %d KiB and is %d KiB", len(big)>>10, n>>10, len(res.body)>>10)
		assert.Less(t, len(res.body), 512<<10, "the page's size")
		assert.Less(t, n, uint64(2<<20), "the page allocates a bounded amount, less than the payload's size")
		assert.True(t, strings.Contains(res.body, fmt.Sprintf("Showing the first %d of ", previewChars)), "the page says the payload is cut")
		assert.True(t, strings.Contains(res.body, fmt.Sprintf(`href="/jobs/%d/payload"`, jobID)), "a link to the whole payload")

		j, err := c.Job(ctx, jobID)
		require.NoError(t, err)
		raw := b.get(fmt.Sprintf("/jobs/%d/payload", jobID))
		require.Equal(t, http.StatusOK, raw.StatusCode)
		assert.Equal(t, "text/plain; charset=utf-8", raw.Header.Get("Content-Type"))
		assert.True(t, raw.body == string(j.Payload), "the raw payload is the stored one (%d bytes, want %d)", len(raw.body), len(j.Payload))

		res = b.get(fmt.Sprintf("/jobs/%d", small))
		assert.Contains(t, res.body, `&#34;n&#34;: 1`, "a small payload is shown whole, indented")
		assert.NotContains(t, res.body, "Showing the first")
		assert.Equal(t, http.StatusNotFound, b.get(fmt.Sprintf("/jobs/%d/heartbeat", small)).StatusCode, "no heartbeat data")
		assert.Equal(t, http.StatusNotFound, b.get("/jobs/999999/payload").StatusCode)

		res = b.get(fmt.Sprintf("/workflows/%d", wfID))
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Less(t, len(res.body), 512<<10, "the workflow page's size")
		assert.True(t, strings.Contains(res.body, fmt.Sprintf(`href="/workflows/%d/state"`, wfID)), "a link to the whole state")
		wf, err := c.Workflow(ctx, wfID)
		require.NoError(t, err)
		raw = b.get(fmt.Sprintf("/workflows/%d/state", wfID))
		require.Equal(t, http.StatusOK, raw.StatusCode)
		assert.True(t, raw.body == string(wf.State), "the raw state is the stored one (%d bytes, want %d)", len(raw.body), len(wf.State))

		// The raw values need the same credentials as the pages.
		tok := newBrowser(t, Handler(c, Options{Token: testToken, Logger: quiet()}))
		assert.Equal(t, http.StatusUnauthorized, tok.get(fmt.Sprintf("/jobs/%d/payload", jobID)).StatusCode)
	})
}

// logTo returns a logger that writes text lines to a buffer.
func logTo() (*slog.Logger, *syncbuf.Buffer) {
	buf := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

var errorID = regexp.MustCompile(`error id ([0-9a-f]{12})`)

// regexpFind returns the first group of re's first match in s, or "".
func regexpFind(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// TestErrorPagesHideInternals checks that a failing store read shows a
// generic message with an id that the log has with the real error, and
// that a missing row's page says "not found" without an error chain.
func TestErrorPagesHideInternals(t *testing.T) {
	c := openStore(t, "mysql")
	log, logs := logTo()
	b := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, Logger: log}))

	res := b.get("/jobs/999999")
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Contains(t, res.body, "Not found: there is no such job.")
	assert.NotContains(t, res.body, "read job")
	assert.NotContains(t, res.body, "999999: not found")

	table := clientseam.StoreOf(c).Info().Prefix + "queuety_workflows"
	_, err := clientseam.StoreOf(c).(*mysql.Store).DB.Exec("DROP TABLE " + table)
	require.NoError(t, err)
	for _, path := range []string{"/workflows", "/workflows?partial=1", "/"} {
		res = b.get(path)
		assert.Equal(t, http.StatusInternalServerError, res.StatusCode, path)
		assert.NotContains(t, res.body, table, path)
		assert.NotContains(t, res.body, "1146", path)
		assert.NotContains(t, res.body, "exist", path)
		m := regexpFind(errorID, res.body)
		require.NotEmpty(t, m, "GET %s: an error id on the page: %s", path, res.body)
		assert.Contains(t, logs.String(), "error_id="+m, "the log has the id")
		assert.Contains(t, logs.String(), table, "the log has the real error")
	}
}

// TestMalformedWorkflowState checks that a workflow whose stored state is
// not a JSON object gets a page that says so and shows the row, never a
// 500, and that the lists still show it.
func TestMalformedWorkflowState(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		id, err := builder.Workflow("broken").Then("a").Dispatch(ctx, c, queuety.State{"x": 1})
		require.NoError(t, err)
		log, logs := logTo()
		b := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, Logger: log}))
		for _, state := range []string{`{not json`, `"a string"`, `{"_steps": 5}`, ``} {
			setWorkflowState(t, c, id, state)
			res := b.get(fmt.Sprintf("/workflows/%d", id))
			require.Equal(t, http.StatusOK, res.StatusCode, "state %q: %s\nlog: %s", state, res.body, logs.String())
			assert.Contains(t, res.body, "broken", "state %q", state)
			if strings.Contains(res.body, `id="undescribed"`) {
				assert.Contains(t, res.body, "stored state cannot be understood", "state %q", state)
				assert.NotContains(t, res.body, "phpjson", "state %q: the decoder's error stays in the log", state)
				m := regexpFind(errorID, res.body)
				require.NotEmpty(t, m, "state %q: an error id", state)
				assert.Contains(t, logs.String(), "error_id="+m)
			}
			assert.Equal(t, http.StatusOK, b.get("/workflows").StatusCode, "state %q: the list", state)
			raw := b.get(fmt.Sprintf("/workflows/%d/state", id))
			require.Equal(t, http.StatusOK, raw.StatusCode, "state %q: the raw state", state)
			assert.Equal(t, state, raw.body)
		}
		setWorkflowState(t, c, id, `{not json`)
		res := b.get(fmt.Sprintf("/workflows/%d", id))
		assert.Contains(t, res.body, `id="workflow-state-error"`, "unparsable JSON: the reason is shown")
		assert.Contains(t, res.body, "{not json", "the stored state is shown")
	})
}

// setWorkflowState overwrites a workflow's stored state.
func setWorkflowState(t *testing.T, c *queuety.Client, id int64, state string) {
	t.Helper()
	var err error
	table := clientseam.StoreOf(c).Info().Prefix + "queuety_workflows"
	switch s := clientseam.StoreOf(c).(type) {
	case *mysql.Store:
		_, err = s.DB.Exec("UPDATE "+table+" SET state = ? WHERE id = ?", state, id)
	case *sqlite.Store:
		_, err = s.DB.Exec("UPDATE "+table+" SET state = ? WHERE id = ?", state, id)
	default:
		t.Fatalf("unknown store %T", s)
	}
	require.NoError(t, err)
}

// TestWorkflowHistoryPages gives a workflow a longer history than a page
// holds and checks that its page shows the first page with a link to the
// next, that the link shows the rest, that the trace download takes
// ?offset= and ?limit=, and that bad values are a 400, not a 500.
func TestWorkflowHistoryPages(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		id, err := builder.Workflow("long").Then("a").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		const extra = queuetytype.DefaultTimelineEntries + 150
		rows := make([]*driver.LogEntry, extra)
		for i := range rows {
			rows[i] = &driver.LogEntry{WorkflowID: id, Handler: "a", Queue: "default", Event: "debug",
				ErrorMessage: fmt.Sprintf("entry-%04d", i), CreatedAt: time.Now().UTC()}
		}
		events := make([]*driver.WorkflowEvent, 3)
		for i := range events {
			events[i] = &driver.WorkflowEvent{WorkflowID: id, StepIndex: 0, Handler: "a", Event: driver.EventStepStarted,
				Input: []byte(fmt.Sprintf(`{"i":%d}`, i)), CreatedAt: time.Now().UTC()}
		}
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			if err := tx.LogInsert(ctx, rows); err != nil {
				return err
			}
			return tx.EventInsert(ctx, events)
		}))
		b := newBrowser(t, Handler(c, open))

		first := b.get(fmt.Sprintf("/workflows/%d", id))
		require.Equal(t, http.StatusOK, first.StatusCode)
		assert.Contains(t, first.body, `id="timeline-pager"`, "a pager under a cut timeline")
		shown := strings.Count(first.body, "entry-")
		assert.Greater(t, shown, queuetytype.DefaultTimelineEntries-10, "entries on the first page")
		assert.LessOrEqual(t, shown, queuetytype.DefaultTimelineEntries, "entries on the first page")
		next := regexpFind(regexp.MustCompile(`href="([^"]*timeline_offset=\d+)#timeline" id="timeline-next"`), first.body)
		require.NotEmpty(t, next, "a link to the later entries")
		second := b.get(strings.ReplaceAll(next, "&amp;", "&"))
		require.Equal(t, http.StatusOK, second.StatusCode)
		assert.Contains(t, second.body, fmt.Sprintf("entry-%04d", extra-1), "the last entry on the second page")
		assert.Equal(t, extra, shown+strings.Count(second.body, "entry-"), "every entry on one of the two pages, once")
		assert.NotContains(t, second.body, `id="timeline-next"`, "no later page after the last")

		var inputs []string
		for offset := 0; offset < 3; offset++ {
			res := b.get(fmt.Sprintf("/workflows/%d/trace.json?limit=1&offset=%d", id, offset))
			require.Equal(t, http.StatusOK, res.StatusCode, res.body)
			var bundle struct {
				Events []struct {
					Input json.RawMessage `json:"input"`
				} `json:"events"`
				Page struct {
					Total int  `json:"events_total"`
					Next  *int `json:"next_offset"`
				} `json:"page"`
			}
			require.NoError(t, json.Unmarshal([]byte(res.body), &bundle))
			require.Len(t, bundle.Events, 1, "events on a trace page of one")
			inputs = append(inputs, string(bundle.Events[0].Input))
			assert.Equal(t, 3, bundle.Page.Total, "events_total")
			if offset < 2 {
				assert.Equal(t, offset+1, *bundle.Page.Next, "next_offset")
			} else {
				assert.Nil(t, bundle.Page.Next, "next_offset after the last page")
			}
		}
		assert.Equal(t, []string{`{"i":0}`, `{"i":1}`, `{"i":2}`}, inputs, "the pages in order")
		for _, bad := range []string{"?timeline_offset=-1", "?timeline_offset=x", "/trace.json?offset=-3", "/trace.json?limit=999999999"} {
			assert.Equal(t, http.StatusBadRequest, b.get(fmt.Sprintf("/workflows/%d%s", id, bad)).StatusCode, bad)
		}
	})
}

// TestWorkflowPageBoundsSignalsAndFailures gives a workflow 5,000
// signals and 5,000 failures, some with large payloads and messages, and
// checks that its page lists the newest DescribeSignals and
// DescribeFailures, says how many it left out, counts the failures of
// every category (not of the listed ones), and stays small in bytes and
// allocations.
func TestWorkflowPageBoundsSignalsAndFailures(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		id, err := builder.Workflow("noisy").Then("a").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		const n, large = 5000, 20 << 10
		cats := []driver.FailureCategory{driver.FailureApplication, driver.FailureApplication, driver.FailureTimeout, driver.FailureCancelled}
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			for i := range n {
				payload := fmt.Sprintf(`{"i":%d}`, i)
				msg := fmt.Sprintf("fail-%05d", i)
				if i%25 == 0 {
					payload = `{"b":"` + strings.Repeat("p", large) + `"}`
					msg += strings.Repeat("m", large)
				}
				if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: id, Name: fmt.Sprintf("sig-%05d", i), Payload: []byte(payload),
					ReceivedAt: time.Now().UTC()}); err != nil {
					return err
				}
				if err := tx.FailureInsert(ctx, &driver.Failure{WorkflowID: id, Category: cats[i%4], Attempt: 1, Message: msg,
					CreatedAt: time.Now().UTC()}); err != nil {
					return err
				}
			}
			return nil
		}))
		b := newBrowser(t, Handler(c, open))
		path := fmt.Sprintf("/workflows/%d", id)
		require.Equal(t, http.StatusOK, b.get(path).StatusCode)
		var res *response
		alloc := allocated(func() { res = b.get(path) })
		require.Equal(t, http.StatusOK, res.StatusCode)
		t.Logf("the page of a workflow with %d signals and %d failures is %d KiB and allocated %d KiB", n, n, len(res.body)>>10, alloc>>10)
		assert.Less(t, len(res.body), 512<<10, "the page's size")
		assert.Less(t, alloc, uint64(8<<20), "the page's allocations")

		assert.Equal(t, queuetytype.DescribeFailures, strings.Count(res.body, ">fail-"), "failures listed")
		assert.Contains(t, res.body, fmt.Sprintf(">fail-%05d<", n-1), "the newest failure")
		assert.NotContains(t, res.body, fmt.Sprintf(">fail-%05d<", n-queuetytype.DescribeFailures-1), "an older failure")
		assert.Contains(t, res.body, fmt.Sprintf("The newest %d of %d failures are listed; the %d older ones", queuetytype.DescribeFailures, n,
			n-queuetytype.DescribeFailures), "the page says which failures it lists")
		assert.Contains(t, res.body, "… (cut)", "a long message is cut")
		chips := regexpFind(regexp.MustCompile(`(?s)id="failure-categories">(.*?)</ul>`), res.body)
		for cat, count := range map[string]int{"application": n / 2, "cancelled": n / 4, "timeout": n / 4} {
			assert.Regexp(t, fmt.Sprintf(`%s</span> <b>%d</b>`, cat, count), chips, "every %s failure counted", cat)
		}

		assert.Equal(t, queuetytype.DescribeSignals, strings.Count(res.body, "<code>sig-"), "signals listed")
		assert.Contains(t, res.body, fmt.Sprintf("<code>sig-%05d</code>", n-1), "the newest signal")
		assert.Contains(t, res.body, fmt.Sprintf("The newest %d of %d signals are listed; the %d older ones are not.", queuetytype.DescribeSignals, n,
			n-queuetytype.DescribeSignals), "the page says which signals it lists")
		assert.Contains(t, res.body, fmt.Sprintf("(%d bytes, not shown)", large+8), "a large payload is left out with its length")
	})
}

// TestJobPageBoundsLogsAndFailures gives a job hundreds of log rows and
// failures with long messages and checks that its page cuts them and
// stays small.
func TestJobPageBoundsLogsAndFailures(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		id, err := c.Dispatch(ctx, "import", queuety.State{"n": 1})
		require.NoError(t, err)
		const rows, long = 300, 60 << 10
		msg := strings.Repeat("e", long)
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			logs := make([]*driver.LogEntry, rows)
			for i := range logs {
				logs[i] = &driver.LogEntry{JobID: &id, Handler: "import", Queue: "default", Event: driver.LogFailed,
					ErrorMessage: fmt.Sprintf("log-%03d ", i) + msg, CreatedAt: time.Now().UTC()}
			}
			if err := tx.LogInsert(ctx, logs); err != nil {
				return err
			}
			for i := range rows {
				if err := tx.FailureInsert(ctx, &driver.Failure{JobID: id, Category: driver.FailureApplication, Attempt: i + 1,
					Message: fmt.Sprintf("failure-%03d ", i) + msg, CreatedAt: time.Now().UTC()}); err != nil {
					return err
				}
			}
			return nil
		}))
		b := newBrowser(t, Handler(c, open))
		path := fmt.Sprintf("/jobs/%d", id)
		require.Equal(t, http.StatusOK, b.get(path).StatusCode)
		var res *response
		alloc := allocated(func() { res = b.get(path) })
		require.Equal(t, http.StatusOK, res.StatusCode)
		t.Logf("the page of a job with %d log rows and %d failures of %d KiB is %d KiB and allocated %d KiB", rows, rows, long>>10,
			len(res.body)>>10, alloc>>10)
		assert.Less(t, len(res.body), 4<<20, "the page's size")
		assert.Less(t, alloc, uint64(32<<20), "the page's allocations")
		assert.Equal(t, rows, strings.Count(res.body, ">log-"), "every log row listed")
		assert.Equal(t, rows, strings.Count(res.body, ">failure-"), "every failure listed")
		assert.Equal(t, rows, strings.Count(res.body, "… (cut)"), "the failure messages are cut")
	})
}

// TestSmallListsArePaged checks that the schedules and webhooks pages
// read a page of rows, newest first, with a link to the older ones, and
// that the workers page reads at most workersShown rows and says how
// many there are.
func TestSmallListsArePaged(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		var schedules []int64
		for i := range schedulesPerPage + 3 {
			id, err := c.Schedule(fmt.Sprintf("sched.%03d", i), nil).Every(time.Hour).Save(ctx)
			require.NoError(t, err)
			schedules = append(schedules, id)
		}
		var hooks []int64
		for i := range webhooksPerPage + 2 {
			h, err := c.AddWebhook(ctx, "job.buried", fmt.Sprintf("https://hooks.example/%03d", i))
			require.NoError(t, err)
			hooks = append(hooks, h.ID)
		}
		now := time.Now().UTC()
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			for i := range workersShown + 5 {
				w := &queuetytype.Worker{ID: fmt.Sprintf("host-%03d", i), Host: "host", PID: i + 1, HeartbeatInterval: time.Hour,
					StartedAt: now, LastHeartbeat: now.Add(time.Duration(i) * time.Millisecond)}
				if err := tx.WorkerSave(ctx, w); err != nil {
					return err
				}
			}
			return nil
		}))
		b := newBrowser(t, Handler(c, open))

		res := b.get("/schedules")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, schedulesPerPage, strings.Count(res.body, "<tr data-schedule="), "schedules on the first page")
		assert.Contains(t, res.body, fmt.Sprintf(`data-schedule="%d"`, schedules[len(schedules)-1]), "the newest first")
		next := fmt.Sprintf("/schedules?before=%d", schedules[3])
		assert.Contains(t, res.body, `href="`+next+`"`, "a link to the older schedules")
		assert.Equal(t, 3, strings.Count(b.get(next).body, "<tr data-schedule="), "the older ones")

		res = b.get("/webhooks")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, webhooksPerPage, strings.Count(res.body, "<tr data-webhook="), "webhooks on the first page")
		next = fmt.Sprintf("/webhooks?before=%d", hooks[2])
		assert.Contains(t, res.body, `href="`+next+`"`, "a link to the older webhooks")
		assert.Equal(t, 2, strings.Count(b.get(next).body, "<tr data-webhook="), "the older ones")

		res = b.get("/workers")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, workersShown, strings.Count(res.body, "<tr data-worker="), "workers listed")
		assert.Contains(t, res.body, fmt.Sprintf("Showing %d of %d workers", workersShown, workersShown+5))
		assert.Contains(t, res.body, fmt.Sprintf(`data-worker="host-%03d"`, workersShown+4), "the most recently renewed")
		assert.NotContains(t, res.body, `data-worker="host-000"`, "not the least recently renewed")

		res = b.get("/")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, res.body, fmt.Sprintf("%d<small> on</small>", schedulesPerPage+3), "the overview counts every schedule")
	})
}

// TestJobTabsCountWhatTheListShows checks that the status tabs leave out
// the engine's own jobs when the list hides them, and count them when it
// shows them.
func TestJobTabsCountWhatTheListShows(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		for range 3 {
			_, err := c.Dispatch(ctx, "email.send", nil, queuety.OnQueue("mail"))
			require.NoError(t, err)
		}
		now := time.Now().UTC()
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			var jobs []*driver.Job
			for i, q := range []string{"mail", "mail", "other"} {
				jobs = append(jobs, &driver.Job{Queue: q, Handler: fmt.Sprintf("__queuety_sleep_%d", i), Payload: []byte(`{}`),
					Status: driver.JobPending, MaxAttempts: 1, AvailableAt: now, CreatedAt: now, CostUnits: 1})
			}
			return tx.JobInsert(ctx, jobs)
		}))
		b := newBrowser(t, Handler(c, open))
		tab := func(body, label string) string {
			return regexpFind(regexp.MustCompile(`>`+label+` <b>(\d+)</b>`), body)
		}
		res := b.get("/jobs")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, 3, strings.Count(res.body, "<tr data-job="), "rows shown")
		assert.Equal(t, "3", tab(res.body, "all"), "all: what the list shows")
		assert.Equal(t, "3", tab(res.body, "pending"), "pending: what the list shows")
		assert.Contains(t, res.body, "the counts above leave them out")
		assert.NotContains(t, res.body, `class="pager"`, "a list of one page has no pager")

		res = b.get("/jobs?queue=mail")
		assert.Equal(t, "3", tab(res.body, "pending"), "one queue")

		res = b.get("/jobs?internal=1")
		assert.Equal(t, 6, strings.Count(res.body, "<tr data-job="), "rows shown with the internal ones")
		assert.Equal(t, "6", tab(res.body, "all"), "all, with the internal ones")
		assert.Equal(t, "6", tab(res.body, "pending"))
		assert.NotContains(t, res.body, "the counts above leave them out")
	})
}
