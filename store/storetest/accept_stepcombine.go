package storetest

// The step completions that several workers of one process record at the
// same time share one transaction, and each worker still gets back only
// the next steps' jobs of its own results, within its own offer.

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Workflows/StepBatchesOfWorkersShareATransaction", testStepBatchesShareATransaction)
}

// gatedStore counts its transactions; while armed, the first one waits
// (up to hold) until others have begun, so that callers which would run
// transactions of their own are seen doing so.
type gatedStore struct {
	driver.Store
	txs   atomic.Int64
	armed atomic.Bool
	first atomic.Bool
	hold  time.Duration
	want  int64
}

func (s *gatedStore) InTx(ctx context.Context, fn func(driver.Tx) error) error {
	n := s.txs.Add(1)
	if s.armed.Load() && s.first.CompareAndSwap(false, true) {
		deadline := time.Now().Add(s.hold)
		for s.txs.Load() < n+s.want-1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return s.Store.InTx(ctx, fn)
}

func testStepBatchesShareATransaction(t *testing.T, e *Env) {
	const workers, per = 4, 3
	gs := &gatedStore{Store: clientseam.StoreOf(e.C), hold: time.Second, want: workers}
	// Not closed: it shares e.C's store.
	c := clientseam.NewClient(gs, queuety.WithClock(e.Clock), queuety.WithLogger(quietLogger())).(*queuety.Client)
	eng := clientseam.Engine(c)
	def := queuety.WorkflowDefinition{Name: "combined", Steps: steps("s", "s", "s")}
	owner := map[int64]int{} // workflow id -> worker
	for k := range workers {
		for range per {
			owner[e.Start(def, queuety.State{"worker": k})] = k
		}
	}
	// Each worker claims its own workflows' first steps.
	claims := make([][]*engine.Claimed, workers)
	all := e.ClaimFrom(c, []string{queuetytype.DefaultQueue}, workers*per, "s")
	require.Len(t, all, workers*per)
	for _, cj := range all {
		k := owner[cj.Job.WorkflowID]
		claims[k] = append(claims[k], cj)
	}
	for step := range 3 {
		results := make([][]*engine.Result, workers)
		for k, cs := range claims {
			require.Len(t, cs, per, "worker %d's jobs of step %d", k, step)
			for _, cj := range cs {
				require.Equal(t, step, *cj.Job.StepIndex)
				results[k] = append(results[k], &engine.Result{Claimed: cj, Output: engine.State{fmt.Sprintf("out%d", step): k}, StartedAt: e.Clock.Now()})
			}
		}
		gs.first.Store(false)
		gs.armed.Store(true)
		before := gs.txs.Load()
		handed := make([][]*engine.Claimed, workers)
		var wg sync.WaitGroup
		for k := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// One slot fewer than the worker's results: one job of
				// each worker's is left pending.
				offer := &engine.EagerOffer{Slots: per - 1, Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"s"}}
				errs, got, err := eng.CompleteStepsEager(e.Ctx, results[k], offer)
				assert.NoError(t, err, "worker %d", k)
				for i, err := range errs {
					assert.NoError(t, err, "worker %d, result %d", k, i)
				}
				handed[k] = got
			}()
		}
		wg.Wait()
		gs.armed.Store(false)
		txs := gs.txs.Load() - before
		t.Logf("step %d: %d transactions for %d workers' batches", step, txs, workers)
		assert.LessOrEqual(t, txs, int64(2), "step %d: transactions for %d workers' batches recorded at once", step, workers)
		if step == 2 {
			for k := range workers {
				assert.Empty(t, handed[k], "worker %d: jobs handed off after the last step", k)
			}
			break
		}
		for k := range workers {
			assert.Len(t, handed[k], per-1, "worker %d: jobs handed off (its offer)", k)
			for _, cj := range handed[k] {
				assert.Equal(t, k, owner[cj.Job.WorkflowID], "worker %d was handed another worker's workflow", k)
				assert.Equal(t, step+1, *cj.Job.StepIndex)
				assert.Equal(t, queuetytype.JobProcessing, e.Job(cj.Job.ID).Status)
			}
			claims[k] = handed[k]
		}
		// The jobs left pending are claimed as each worker's own.
		rest := e.ClaimFrom(c, []string{queuetytype.DefaultQueue}, workers*per, "s")
		require.Len(t, rest, workers, "jobs left pending after step %d", step)
		for _, cj := range rest {
			k := owner[cj.Job.WorkflowID]
			claims[k] = append(claims[k], cj)
		}
	}
	ids := make([]int64, 0, len(owner))
	for id := range owner {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		wf := e.Workflow(id)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
		st := e.State(id)
		for step := range 3 {
			assert.EqualValues(t, owner[id], st[fmt.Sprintf("out%d", step)], "workflow %d, step %d's output", id, step)
		}
		jobs := e.Jobs(driver.JobFilter{WorkflowID: id})
		assert.Len(t, jobs, 3, "workflow %d's jobs", id)
		for _, j := range jobs {
			assert.Equal(t, queuetytype.JobCompleted, j.Status, "workflow %d, job %d", id, j.ID)
			assert.Equal(t, 1, j.Attempts, "workflow %d, job %d", id, j.ID)
		}
	}
}
