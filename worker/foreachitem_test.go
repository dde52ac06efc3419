package worker_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
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

// TestForEachItemHandlerGetsNoState runs the same for-each workflow twice,
// one after the other on one slot (so the branches complete in the same
// order, which the winner and the results' layout follow), once with a
// HandleForEach handler and once with a HandleForEachItem handler under
// the same name: the item handler's invocation carries no state (the
// worker copied none for it), it gets each item and index, and the rows
// left behind are the same: the stored state (time stamps aside), the
// branch jobs' payloads and statuses, and the events.
func TestForEachItemHandlerGetsNoState(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		items := []any{"a", 2, map[string]any{"k": []any{1, 2}}, []any{"x"}, nil}
		type seen struct {
			state bool
			item  any
			index int
		}
		run := func(register func(w *worker.Worker)) (int64, map[int]seen) {
			wfID, err := builder.Workflow("fan").OnQueue("fan").ForEach("items", "b").Dispatch(ctx, c,
				queuety.State{"items": items, "config": map[string]any{"mode": "fast"}})
			require.NoError(t, err)
			w := worker.New(c, worker.Queues("fan"), worker.Concurrency(1), worker.NoMaintenance(), worker.WithLogger(quiet()))
			var mu sync.Mutex
			got := map[int]seen{}
			w.Registry().UseFor("b", func(next queuety.Handler) queuety.Handler {
				return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
					require.Equal(t, queuety.KindForEach, inv.Kind)
					mu.Lock()
					got[inv.Index] = seen{state: inv.State != nil, item: inv.Item, index: inv.Index}
					mu.Unlock()
					return next(ctx, inv)
				}
			})
			register(w)
			st, err := w.RunOnce(ctx, time.Minute)
			require.NoError(t, err)
			assert.Equal(t, int64(len(items)), st.Succeeded-1, "the branches and the placeholder")
			return wfID, got
		}
		withState, seenState := run(func(w *worker.Worker) {
			w.HandleForEach("b", func(_ context.Context, s queuety.State, item any, index int) (queuety.State, error) {
				if s["config"] == nil || len(s["items"].([]any)) != len(items) {
					return nil, queuety.NonRetryable(assert.AnError)
				}
				return queuety.State{"item": item, "index": index}, nil
			})
		})
		itemOnly, seenItem := run(func(w *worker.Worker) {
			w.HandleForEachItem("b", func(_ context.Context, item any, index int) (queuety.State, error) {
				return queuety.State{"item": item, "index": index}, nil
			})
		})
		require.Len(t, seenState, len(items))
		require.Len(t, seenItem, len(items))
		for i := range items {
			assert.True(t, seenState[i].state, "a HandleForEach handler gets the state")
			assert.False(t, seenItem[i].state, "a HandleForEachItem handler gets no state")
			assert.Equal(t, seenState[i], seen{state: true, item: seenItem[i].item, index: i}, "item %d", i)
		}

		a, b := workflowRows(t, c, withState), workflowRows(t, c, itemOnly)
		assert.Equal(t, driver.WorkflowCompleted, a.wf.Status)
		assert.Equal(t, a.state, b.state, "stored state")
		assert.Equal(t, a.jobs, b.jobs, "jobs")
		assert.Equal(t, a.events, b.events, "events")
		var st map[string]any
		require.NoError(t, json.Unmarshal(b.wf.State, &st))
		assert.Len(t, st["0_results"].(map[string]any)["results"], len(items))
	})
}

// rowsOfWorkflow are the rows a workflow left, with what differs between
// two runs of the same definition (ids, times, the order of events) left
// out.
type rowsOfWorkflow struct {
	wf     *queuetytype.Workflow
	state  map[string]any
	jobs   []string
	events []string
}

// workflowRows reads the rows of workflow id.
func workflowRows(t *testing.T, c *queuety.Client, id int64) rowsOfWorkflow {
	t.Helper()
	ctx := context.Background()
	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	r := rowsOfWorkflow{wf: wf}
	jobs := workflowJobs(t, c, id)
	require.NotEmpty(t, jobs)
	// Job ids count from the workflow's first job (its placeholder).
	jobIDs := regexp.MustCompile(`"job_id":(\d+)`)
	relative := func(b []byte) string {
		return jobIDs.ReplaceAllStringFunc(string(b), func(m string) string {
			n, err := strconv.ParseInt(jobIDs.FindStringSubmatch(m)[1], 10, 64)
			require.NoError(t, err)
			return `"job_id":` + strconv.FormatInt(n-jobs[0].ID, 10)
		})
	}
	require.NoError(t, json.Unmarshal([]byte(relative(wf.State)), &r.state))
	for k := range r.state {
		if strings.HasSuffix(k, "_at") {
			delete(r.state, k)
		}
	}
	for _, j := range jobs {
		r.jobs = append(r.jobs, strings.Join([]string{j.Handler, string(j.Status), string(j.Payload)}, " "))
	}
	var events []*driver.WorkflowEvent
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) (err error) {
		events, err = tx.EventList(ctx, id)
		return err
	}))
	for _, e := range events {
		r.events = append(r.events, strings.Join([]string{e.StepName, string(e.Event), e.Handler, relative(e.Input), relative(e.Output),
			relative(e.StateBefore), relative(e.StateAfter), relative(e.Context), relative(e.Error)}, " "))
	}
	slices.Sort(r.events) // branches complete in any order
	return r
}
