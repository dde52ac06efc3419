package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// timelineWorkflow dispatches and runs a workflow with a step, a
// for-each step of three items (the second fails once), a signal wait
// and a child workflow, and returns its id once it completed. Its
// handlers take a few hundred milliseconds each (durations are measured
// on the wall clock), so that the bars have lengths.
func timelineWorkflow(t *testing.T, c *queuety.Client) int64 {
	t.Helper()
	ctx := context.Background()
	takes := func(d time.Duration) { time.Sleep(d) }
	child := builder.Workflow("tl.child").Then("tl.fetch")
	id, err := builder.Workflow("tl.demo").Then("tl.fetch").ForEach("items", "tl.item", builder.Retry(2, queuety.BackoffSeconds(0))).
		WaitForSignal("go").RunWorkflow("child", child).Then("tl.finish").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	var once sync.Once
	run := func() {
		w := worker.New(c, worker.Concurrency(1), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond))
		w.HandleStep("tl.fetch", func(context.Context, queuety.State) (queuety.State, error) {
			takes(400 * time.Millisecond)
			return queuety.State{"items": []any{"a", "b", "c"}}, nil
		})
		w.HandleForEach("tl.item", func(_ context.Context, _ queuety.State, _ any, index int) (queuety.State, error) {
			takes(time.Duration(300+200*index) * time.Millisecond)
			var err error
			if index == 1 {
				once.Do(func() { err = errors.New("item b is not ready") })
			}
			return queuety.State{"done": index}, err
		})
		w.HandleStep("tl.finish", func(context.Context, queuety.State) (queuety.State, error) {
			takes(300 * time.Millisecond)
			return queuety.State{"finished": true}, nil
		})
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	run()
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, id))
	takes(time.Second) // the wait lasts a while
	require.NoError(t, c.Signal(ctx, id, "go", nil))
	run()
	require.Equal(t, queuetytype.WorkflowCompleted, workflowStatus(t, c, id))
	return id
}

// TestWorkflowTimelineBrowser draws a workflow's timeline in headless
// Chromium on both stores: a bar per attempt of every job (the failed
// attempt marked), a bar for the wait and for the child workflow, each
// linked to its job or workflow.
func TestWorkflowTimelineBrowser(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		id := timelineWorkflow(t, c)
		jobs, err := c.ListJobs(context.Background(), queuetytype.JobFilter{WorkflowID: id, Limit: 100, WithoutPayload: true})
		require.NoError(t, err)
		require.Len(t, jobs, 8, "fetch, the for-each step and its three items, the wait, the child's start and finish")

		p := newPageSession(t, c, Options{RefreshInterval: -1})
		p.open(fmt.Sprintf("/workflows/%d", id), "#wf-timeline svg")
		rows := p.attrs("#wf-timeline g.row")
		steps := map[string]bool{}
		attempts := map[string]int{}
		var failed []string
		for _, r := range rows {
			steps[r["data-step"]] = true
			if r["data-job"] != "" {
				attempts[r["data-job"]]++
			}
			if r["data-failed"] == "true" {
				failed = append(failed, r["data-job"]+"/"+r["data-attempt"])
			}
		}
		assert.Equal(t, map[string]bool{"0": true, "1": true, "2": true, "3": true, "4": true}, steps, "a bar for every step")
		var retried int64
		for _, j := range jobs {
			assert.Equal(t, j.Attempts, attempts[strconv.FormatInt(j.ID, 10)], "a bar per attempt of job %d (%s)", j.ID, j.Handler)
			if j.Attempts > 1 {
				retried = j.ID
			}
		}
		require.NotZero(t, retried, "an item was retried")
		assert.Equal(t, []string{fmt.Sprintf("%d/1", retried)}, failed, "the failed attempt is marked")
		links := map[string]bool{}
		for _, a := range p.attrs("#wf-timeline svg a") {
			links[a["href"]] = true
		}
		for job := range attempts {
			assert.True(t, links["/jobs/"+job], "a link to job %s", job)
		}
		kinds := map[string]int{}
		for _, r := range rows {
			kinds[r["data-kind"]]++
		}
		assert.Equal(t, 1, kinds["wait"], "the signal wait's job, drawn until the signal came")
		assert.Equal(t, 1, kinds["child"], "the child workflow")
		assert.Contains(t, p.text(fmt.Sprintf(`#wf-timeline g[data-job="%d"] title`, retried)), "item b is not ready")
		p.shot("workflow-timeline")
		p.shotOf("#wf-timeline", "workflow-timeline-drawing")
	})
}

// TestWorkflowTimelineIsBounded checks that the drawing of a workflow
// with two for-each steps of 150 items holds at most timelineRows bars
// and says how many it left out.
func TestWorkflowTimelineIsBounded(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	items := make([]any, timelineRows+30)
	for i := range items {
		items[i] = i
	}
	id, err := builder.Workflow("wide").ForEach("items", "wide.item").ForEach("items", "wide.item").
		Dispatch(ctx, c, queuety.State{"items": items})
	require.NoError(t, err)
	w := worker.New(c, worker.Concurrency(8), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond))
	w.HandleForEach("wide.item", func(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil })
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, workflowStatus(t, c, id))

	res := newBrowser(t, Handler(c, open)).get(fmt.Sprintf("/workflows/%d", id))
	require.Equal(t, http.StatusOK, res.StatusCode)
	bars := strings.Count(res.body, `<g class="row"`)
	assert.LessOrEqual(t, bars, timelineRows, "bars drawn")
	assert.Positive(t, bars)
	assert.True(t, strings.Contains(res.body, `id="wf-timeline-jobs-more"`), "the jobs the description did not list are counted")
	assert.Equal(t, timelineRows, bars, "the drawing is full")
	assert.True(t, strings.Contains(res.body, `id="wf-timeline-truncated"`), "the page says how many bars it left out")
}

// TestWorkflowTimelinePlacesWaitsPastTheFirstPage gives a workflow more
// timeline entries before its signal wait than a page of the timeline
// holds, and checks that the drawing still places the wait from its
// start to the signal an hour later, and the child workflow after it.
func TestWorkflowTimelinePlacesWaitsPastTheFirstPage(t *testing.T) {
	eachStore(t, func(t *testing.T, store *queuety.Client) {
		ctx := context.Background()
		start := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)
		clock := queuety.NewFakeClock(start)
		c := pastClient(store, clock)
		child := builder.Workflow("tl.child").Then("tl.step")
		id, err := builder.Workflow("tl.long").Then("tl.step").WaitForSignal("go").RunWorkflow("child", child).
			Dispatch(ctx, c, queuety.State{})
		require.NoError(t, err)
		run := func() {
			w := worker.New(c, worker.Concurrency(1), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond))
			w.HandleStep("tl.step", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
			_, err := w.RunOnce(ctx, time.Minute)
			require.NoError(t, err)
		}
		run()
		require.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, id))
		// More entries than a page, before the wait's end.
		rows := make([]*driver.LogEntry, queuetytype.DefaultTimelineEntries+100)
		for i := range rows {
			rows[i] = &driver.LogEntry{WorkflowID: id, Handler: "tl.step", Queue: "default", Event: "debug",
				ErrorMessage: fmt.Sprintf("note-%04d", i), CreatedAt: start.Add(time.Second)}
		}
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.LogInsert(ctx, rows) }))
		clock.Advance(time.Hour)
		require.NoError(t, c.Signal(ctx, id, "go", nil))
		run()
		clock.Advance(time.Minute)
		run()
		require.Equal(t, queuetytype.WorkflowCompleted, workflowStatus(t, c, id))

		res := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, Logger: quiet(), Clock: clock})).get(fmt.Sprintf("/workflows/%d", id))
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, res.body, `id="timeline-next"`, "the timeline has a second page")
		bar := func(kind string) (x, w int) {
			t.Helper()
			m := regexp.MustCompile(`data-kind="` + kind + `"[^>]*>\s*<text[^>]*>[^<]*</text>\s*<a [^>]*><rect class="[^"]*" x="(\d+)" y="\d+" width="(\d+)"`).
				FindStringSubmatch(res.body)
			require.NotNil(t, m, "a %s bar", kind)
			x, _ = strconv.Atoi(m[1])
			w, _ = strconv.Atoi(m[2])
			return x, w
		}
		plot := timelineWidth - timelineLabelW - 10
		wx, ww := bar("wait")
		assert.Greater(t, ww, plot*9/10, "the wait lasts most of the drawing: from its start to the signal an hour later")
		cx, _ := bar("child")
		assert.GreaterOrEqual(t, cx, wx+ww-2, "the child workflow starts after the wait")
		assert.NotContains(t, res.body, `id="wf-timeline-entries"`, "nothing is left to the page's entries")
	})
}
