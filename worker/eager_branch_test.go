package worker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// stepHandlers are the handlers an offer of these tests names: the
// steps' and the engine's placeholders.
func stepHandlers(names ...string) []string { return append(names, engine.InternalHandlers()...) }

// expandForEach dispatches a workflow whose only step is a for-each of
// five items on queue, claims its placeholder and records the
// placeholder's success with offer; it returns the workflow, the jobs
// handed off and the workflow's jobs afterwards (placeholder first).
func expandForEach(t *testing.T, c *queuety.Client, queue string, between func(), offer *engine.EagerOffer) (int64, []*engine.Claimed, []*driver.Job) {
	t.Helper()
	ctx := context.Background()
	wfID, err := builder.Workflow("fan").OnQueue(queue).ForEach("items", "b").Dispatch(ctx, c, queuety.State{"items": []any{1, 2, 3, 4, 5}})
	require.NoError(t, err)
	e := clientseam.Engine(c)
	claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{queue}, Handlers: stepHandlers("b"), Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, engine.HandlerForEach, claimed[0].Job.Handler)
	if between != nil {
		between()
	}
	r := &engine.Result{Claimed: claimed[0], StartedAt: time.Now()}
	errs, handed, err := e.CompleteStepsEager(ctx, []*engine.Result{r}, offer)
	require.NoError(t, err)
	require.NoError(t, errors.Join(errs...))
	jobs := workflowJobs(t, c, wfID)
	require.Len(t, jobs, 6, "the placeholder and five branches")
	require.Equal(t, driver.JobCompleted, jobs[0].Status, "placeholder")
	return wfID, handed, jobs
}

// TestEagerBranchesHandedOff expands a for-each of five items with three
// slots offered: three branch jobs are inserted already claimed by the
// expanding worker (the rows a claim writes, its claim token, no claim
// statement), the other two pending.
func TestEagerBranchesHandedOff(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		offer := &engine.EagerOffer{Slots: 3, Queues: []string{"fan"}, Handlers: stepHandlers("b"), Admission: engine.NewAdmission(admission.Limits{}, nil)}
		_, handed, jobs := expandForEach(t, c, "fan", nil, offer)
		require.Len(t, handed, 3, "one job a free slot")
		byID := map[int64]*driver.Job{}
		for _, j := range jobs[1:] {
			byID[j.ID] = j
		}
		for _, cj := range handed {
			row := byID[cj.Job.ID]
			require.NotNil(t, row, "handed job %d is one of the workflow's branches", cj.Job.ID)
			assert.Equal(t, "b", row.Handler)
			assert.Equal(t, driver.JobProcessing, row.Status)
			assert.Equal(t, 1, row.Attempts)
			assert.False(t, row.ReservedAt.IsZero())
			assert.NotZero(t, row.ClaimToken)
			assert.Equal(t, cj.Job.ClaimToken, row.ClaimToken, "the expanding worker's claim")
			info := cj.Info()
			assert.Equal(t, "b", info.Handler)
			delete(byID, row.ID)
		}
		require.Len(t, byID, 2)
		for _, j := range byID {
			assert.Equal(t, driver.JobPending, j.Status)
			assert.Zero(t, j.Attempts)
			assert.Zero(t, j.ClaimToken)
			assert.True(t, j.ReservedAt.IsZero())
		}
	})
}

// TestEagerBranchesFallBack expands a for-each where nothing may be
// handed off: every branch job is inserted pending.
func TestEagerBranchesFallBack(t *testing.T) {
	cases := map[string]struct {
		offer   func(o *engine.EagerOffer)
		between func(t *testing.T, c *queuety.Client, queue string)
	}{
		"no free slot":    {offer: func(o *engine.EagerOffer) { o.Slots = 0 }},
		"foreign handler": {offer: func(o *engine.EagerOffer) { o.Handlers = stepHandlers("other") }},
		"other queue":     {offer: func(o *engine.EagerOffer) { o.Queues = []string{"mail"} }},
		"cost budget":     {offer: func(o *engine.EagerOffer) { o.Admission = engine.NewAdmission(admission.Limits{WorkerCost: 10}, nil) }},
		"paused queue": {between: func(t *testing.T, c *queuety.Client, queue string) {
			require.NoError(t, c.PauseQueue(context.Background(), queue))
		}},
		"no offer (stopping)": {offer: nil},
	}
	eachStore(t, func(t *testing.T, dsn string) {
		for name, cs := range cases {
			t.Run(name, func(t *testing.T) {
				c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()))
				require.NoError(t, err)
				defer c.Close()
				queue := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(name)
				offer := &engine.EagerOffer{Slots: 5, Queues: []string{queue}, Handlers: stepHandlers("b"), Admission: engine.NewAdmission(admission.Limits{}, nil)}
				if cs.offer != nil {
					cs.offer(offer)
				}
				if name == "no offer (stopping)" {
					offer = nil
				}
				var between func()
				if cs.between != nil {
					between = func() { cs.between(t, c, queue) }
				}
				_, handed, jobs := expandForEach(t, c, queue, between, offer)
				assert.Empty(t, handed)
				for _, j := range jobs[1:] {
					assert.Equal(t, driver.JobPending, j.Status, "branch %d", j.ID)
					assert.Zero(t, j.Attempts)
					assert.Zero(t, j.ClaimToken)
				}
			})
		}
	})
}

// TestEagerParallelBranchesHandedOff records the step before a parallel
// step of two branches with one slot offered: one branch job is handed
// off, the other inserted pending.
func TestEagerParallelBranchesHandedOff(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		wfID, err := builder.Workflow("par").Then("s1").Parallel("p1", "p2").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		e := clientseam.Engine(c)
		handlers := stepHandlers("s1", "p1", "p2")
		claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: handlers, Limit: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		assert.Equal(t, 2, claimed[0].Handoffs(8), "the next step's branches")
		r := &engine.Result{Claimed: claimed[0], Output: queuety.State{"one": 1}, StartedAt: time.Now()}
		errs, handed, err := e.CompleteStepsEager(ctx, []*engine.Result{r}, &engine.EagerOffer{Slots: 1, Queues: []string{queuetytype.DefaultQueue}, Handlers: handlers})
		require.NoError(t, err)
		require.NoError(t, errors.Join(errs...))
		require.Len(t, handed, 1)
		jobs := workflowJobs(t, c, wfID)
		require.Len(t, jobs, 3)
		assert.Equal(t, handed[0].Job.ID, jobs[1].ID)
		assert.Equal(t, driver.JobProcessing, jobs[1].Status)
		assert.Equal(t, handed[0].Job.ClaimToken, jobs[1].ClaimToken)
		assert.Equal(t, map[string]any{"one": int64(1)}, map[string]any(handed[0].State()), "the state the branch starts from")
		assert.Equal(t, driver.JobPending, jobs[2].Status)
	})
}

// TestEagerBranchesRunWithoutClaims runs a for-each workflow of four items
// with one worker: only the placeholder is claimed, its expansion hands
// the four branches to the worker, and every job starts once.
func TestEagerBranchesRunWithoutClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		obs := &claimObserver{claimed: map[int64]int{}, started: map[int64]int{}}
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithObserver(obs))
		require.NoError(t, err)
		defer c.Close()
		wfID, err := builder.Workflow("fan").ForEach("items", "b").Dispatch(ctx, c, queuety.State{"items": []any{"a", "b", "c", "d"}})
		require.NoError(t, err)
		w := worker.New(c, worker.Concurrency(8), worker.NoMaintenance(), worker.WithLogger(quiet()))
		w.HandleForEach("b", func(ctx context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
			return queuety.State{"item": item}, nil
		})
		st, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(5), st.Claimed, "placeholder and branches")
		assert.Equal(t, int64(4), st.Eager, "branches handed off")
		assert.Equal(t, int64(5), st.Succeeded)
		wf, err := c.Workflow(ctx, wfID)
		require.NoError(t, err)
		assert.Equal(t, driver.WorkflowCompleted, wf.Status)
		jobs := workflowJobs(t, c, wfID)
		require.Len(t, jobs, 5)
		for _, j := range jobs {
			assert.Equal(t, driver.JobCompleted, j.Status)
			assert.Equal(t, 1, j.Attempts, "job %d ran once", j.ID)
			assert.Equal(t, 1, obs.claimed[j.ID], "job %d reported claimed once", j.ID)
			assert.Equal(t, 1, obs.started[j.ID], "job %d started once", j.ID)
		}
	})
}

// TestEagerBranchAbandonedIsRecovered hands a for-each's branch to a
// worker that then abandons it (its handler ignores the shutdown): the
// job stays claimed like a claimed one, stale recovery returns it after
// the lease timeout, another worker completes the workflow, and the
// abandoned attempt's late result is rejected as stale.
func TestEagerBranchAbandonedIsRecovered(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		a := newAbandonment(t, dsn)
		wfID, err := builder.Workflow("abandon").ForEach("items", "b").Dispatch(context.Background(), a.c, queuety.State{"items": []any{"x"}})
		require.NoError(t, err)
		w1 := a.worker(func(j *driver.Job) bool { return j.Handler == "b" })
		w1.HandleForEach("b", func(ctx context.Context, _ queuety.State, _ any, _ int) (queuety.State, error) {
			a.hold(ctx)
			return queuety.State{"late": true}, nil
		})
		branch, st := a.run(w1, "the branch")
		assert.Equal(t, int64(1), st.Eager, "the branch was handed off")
		assert.Equal(t, int64(2), st.Claimed, "placeholder and branch")

		w2 := worker.New(a.c, worker.NoMaintenance(), worker.WithLogger(quiet()))
		w2.HandleForEach("b", func(context.Context, queuety.State, any, int) (queuety.State, error) {
			return queuety.State{"ok": true}, nil
		})
		st = a.recover(w2, wfID, branch)
		assert.Equal(t, int64(1), st.Succeeded, "the branch")
	})
}

// TestEagerBranchesCombinedPerWorker expands the for-each placeholders
// of four workflows from four callers at once, each offering different
// slots, as the workers of one process do (their branch batches share
// one transaction when they meet): each caller gets back only branches
// of its own workflow, never more than it offered, each claimed under
// the token it got, and the rest stay pending.
func TestEagerBranchesCombinedPerWorker(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		e := clientseam.Engine(c)
		for round := range 3 {
			const callers = 4
			queues := make([]string, callers)
			wfIDs := make([]int64, callers)
			claims := make([]*engine.Claimed, callers)
			for k := range callers {
				queues[k] = "comb-" + strconv.Itoa(round) + "-" + strconv.Itoa(k)
				wfIDs[k], err = builder.Workflow("comb").OnQueue(queues[k]).ForEach("items", "b").Dispatch(ctx, c, queuety.State{"items": []any{1, 2, 3, 4, 5}})
				require.NoError(t, err)
				got, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{queues[k]}, Handlers: stepHandlers("b"), Limit: 1})
				require.NoError(t, err)
				require.Len(t, got, 1)
				claims[k] = got[0]
			}
			handed := make([][]*engine.Claimed, callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for k := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					offer := &engine.EagerOffer{Slots: k + 1, Queues: queues, Handlers: stepHandlers("b")}
					errs, h, err := e.CompleteStepsEager(ctx, []*engine.Result{{Claimed: claims[k], StartedAt: time.Now()}}, offer)
					assert.NoError(t, err)
					assert.NoError(t, errors.Join(errs...))
					handed[k] = h
				}()
			}
			close(start)
			wg.Wait()
			for k := range callers {
				assert.Len(t, handed[k], k+1, "caller %d: one branch a slot", k)
				mine := map[int64]int64{}
				for _, cj := range handed[k] {
					assert.Equal(t, wfIDs[k], cj.Job.WorkflowID, "caller %d got a branch of its own workflow", k)
					mine[cj.Job.ID] = cj.Job.ClaimToken
				}
				for _, j := range workflowJobs(t, c, wfIDs[k])[1:] {
					if token, ok := mine[j.ID]; ok {
						assert.Equal(t, driver.JobProcessing, j.Status)
						assert.Equal(t, token, j.ClaimToken)
						continue
					}
					assert.Equal(t, driver.JobPending, j.Status)
				}
			}
		}
	})
}
