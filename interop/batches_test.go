package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// The job handlers and callback classes of the batch and chain scenarios
// (interop/php/handlers.php).
const (
	hOkJob        = `QueuetyGoInterop\OkJob`
	hFailJob      = `QueuetyGoInterop\FailJob`
	hBatchThen    = `QueuetyGoInterop\BatchThen`
	hBatchCatch   = `QueuetyGoInterop\BatchCatch`
	hBatchFinally = `QueuetyGoInterop\BatchFinally`
	hChainCaught  = `QueuetyGoInterop\ChainCaught`
)

// failJobErr is what the Go twin of FailJob returns: PHP's exception
// class and message, and no retry (PHP's worker applies FailJob's
// config() max_attempts 1 whatever the row says).
func failJobErr(p queuety.Payload) error {
	n, _ := p.Int("n")
	return queuety.NonRetryable(&phpException{class: "RuntimeException", msg: fmt.Sprintf("job %d failed", n)})
}

// runJobs claims and runs OkJob and FailJob jobs of queue one at a time
// through the engine, each recorded before the next is claimed, as one
// PHP worker does, and returns how many it ran (at most max).
func (e *env) runJobs(queue string, max int) int {
	e.t.Helper()
	eng := clientseam.Engine(e.c)
	n := 0
	for ; n < max; n++ {
		jobs, err := eng.Claim(e.ctx, engine.ClaimRequest{Queues: []string{queue}, Handlers: []string{hOkJob, hFailJob}, Limit: 1})
		require.NoError(e.t, err, "claim")
		if len(jobs) == 0 {
			break
		}
		cj := jobs[0]
		var jobErr error
		if cj.Job.Handler == hFailJob {
			jobErr = failJobErr(cj.Payload())
		}
		require.NoError(e.t, eng.Finish(e.ctx, &engine.Result{Claimed: cj, Err: jobErr, StartedAt: e.clock.Now()}), "record job %d", cj.Job.ID)
	}
	return n
}

// callbackView is what the PHP callback classes record (mark()).
type callbackView struct {
	Callback string `json:"batch_callback,omitempty"`
	Batch    *struct {
		ID           int64   `json:"id"`
		Name         *string `json:"name"`
		TotalJobs    int     `json:"total_jobs"`
		PendingJobs  int     `json:"pending_jobs"`
		FailedJobs   int     `json:"failed_jobs"`
		FailedJobIDs []int64 `json:"failed_job_ids"`
		Progress     int     `json:"progress"`
		Finished     bool    `json:"finished"`
		Cancelled    bool    `json:"cancelled"`
	} `json:"batch,omitempty"`
	ChainCatch string `json:"chain_catch,omitempty"`
	JobID      int64  `json:"job_id,omitempty"`
	Handler    string `json:"handler,omitempty"`
	Error      string `json:"error,omitempty"`
}

// phpCallbacks returns the callback calls a snapshot's "marker lines"
// recorded, without the job lines.
func phpCallbacks(t *testing.T, raw json.RawMessage) []callbackView {
	t.Helper()
	var lines []callbackView
	require.NoError(t, json.Unmarshal(raw, &lines), "marker lines")
	var out []callbackView
	for _, l := range lines {
		if l.Callback != "" || l.ChainCatch != "" {
			out = append(out, l)
		}
	}
	return out
}

// callbackRecorder registers Go batch callbacks and chain catch handlers
// under the PHP class names and records what they get in PHP's shape.
type callbackRecorder struct {
	mu    sync.Mutex
	calls []callbackView
}

func (r *callbackRecorder) register(w *worker.Worker) {
	for _, name := range []string{hBatchThen, hBatchCatch, hBatchFinally} {
		w.HandleBatchCallback(name, func(_ context.Context, b *queuety.Batch) error {
			v := callbackView{Callback: name}
			raw, _ := json.Marshal(map[string]any{"id": b.ID, "name": nilIfEmpty(b.Name), "total_jobs": b.TotalJobs,
				"pending_jobs": b.PendingJobs, "failed_jobs": b.FailedJobs, "failed_job_ids": b.FailedJobIDs,
				"progress": b.Progress(), "finished": b.Finished(), "cancelled": b.Cancelled()})
			if err := json.Unmarshal([]byte(`{"batch_callback":"x","batch":`+string(raw)+`}`), &v); err != nil {
				return err
			}
			v.Callback = name
			r.add(v)
			return nil
		})
	}
	w.HandleChainCatch(hChainCaught, func(_ context.Context, f queuety.ChainFailure) error {
		r.add(callbackView{ChainCatch: hChainCaught, JobID: f.JobID, Handler: f.Handler, Error: f.Error})
		return nil
	})
}

func (r *callbackRecorder) add(v callbackView) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, v)
}

func (r *callbackRecorder) all() []callbackView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]callbackView(nil), r.calls...)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// runCallbacks runs the callback jobs of queue with a Go worker that has
// the scenario's callbacks, one at a time, and then removes them and their
// log rows: Queuety PHP calls callbacks in-process and leaves no rows.
func (e *env) runCallbacks(queue string, rec *callbackRecorder) {
	e.t.Helper()
	w := e.worker(worker.Queues(queue))
	rec.register(w)
	e.drain(w)
	for _, h := range []string{hBatchThen, hBatchCatch, hBatchFinally, hChainCaught} {
		_, err := e.db.Exec("DELETE FROM `"+e.prefix+"queuety_logs` WHERE handler = ?", h)
		require.NoError(e.t, err)
		res, err := e.db.Exec("DELETE FROM `"+e.prefix+"queuety_jobs` WHERE handler = ? AND status = 'completed'", h)
		require.NoError(e.t, err)
		if n, _ := res.RowsAffected(); n > 0 {
			e.t.Logf("removed %d completed %s callback job(s)", n, h)
		}
	}
}

// TestGoBatchRowsMatchPHP dispatches the batches and chains of u_batch,
// u2_batch_cancel and v_chain with the Go client and compares every table
// with the rows Queuety PHP's create_batch and chain wrote.
func TestGoBatchRowsMatchPHP(t *testing.T) {
	t.Parallel()
	ok := func(n int, opts ...queuety.JobOption) queuety.JobRequest {
		return queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": n}, Options: opts}
	}
	fail := func(n int) queuety.JobRequest {
		return queuety.JobRequest{Handler: hFailJob, Payload: queuety.State{"n": n}, Options: []queuety.JobOption{queuety.MaxAttempts(1)}}
	}
	t.Run("u_batch", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "u_batch.json")
		c := e.c
		_, err := c.NewBatch(ok(1), ok(2), fail(3)).Name("import").OnQueue("batch").
			Then(hBatchThen).Catch(hBatchCatch).Finally(hBatchFinally).AllowFailures().Dispatch(e.ctx)
		require.NoError(t, err)
		_, err = c.NewBatch(fail(4), ok(5)).OnQueue("batch").Catch(hBatchCatch).Finally(hBatchFinally).Dispatch(e.ctx)
		require.NoError(t, err)
		_, err = c.NewBatch(ok(6)).OnQueue("batch").Dispatch(e.ctx)
		require.NoError(t, err)
		e.compareWith(e.snap("dispatched"))
	})
	t.Run("u2_batch_cancel", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "u2_batch_cancel.json")
		_, err := e.c.NewBatch(ok(1), ok(2), ok(3)).Name("cancel me").Then(hBatchThen).Finally(hBatchFinally).Dispatch(e.ctx)
		require.NoError(t, err)
		e.compareWith(e.snap("dispatched"))
	})
	t.Run("v_chain", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "v_chain.json")
		first, err := e.c.Chain(ok(1), ok(2), queuety.JobRequest{Handler: hOkJob}).OnQueue("chain").Dispatch(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), first, "first job id")
		first, err = e.c.Chain(ok(4), queuety.JobRequest{Handler: hFailJob, Payload: queuety.State{"n": 5}}, ok(6)).
			OnQueue("chain").Catch(hChainCaught).Dispatch(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(4), first, "first job id")
		e.compareWith(e.snap("dispatched"))
	})
}

// TestPHPBatchRunByGo runs the batches Queuety PHP dispatched in u_batch
// through the Go engine, job by job in PHP's order: the rows after the
// first job and at the end are PHP's; the callbacks are enqueued as Go
// jobs (a Go worker registered them under the PHP class names) and see
// the batch exactly as PHP's callback classes saw it.
func TestPHPBatchRunByGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "u_batch.json")
	e.load("dispatched")
	e.clock.Set(e.snap("after the first job").Now())
	require.Equal(t, 1, e.runJobs("batch", 1))
	e.compareWith(e.snap("after the first job"))

	final := e.snap("finished")
	e.clock.Set(final.Now())
	assert.Equal(t, 5, e.runJobs("batch", 100), "jobs run")
	rec := &callbackRecorder{}
	e.runCallbacks("batch", rec)
	assert.Equal(t, phpCallbacks(t, final.Observed["marker lines"]), rec.all(), "callbacks and what they saw, PHP's (expected) and Go's")
	e.compareWith(final)
}

// TestPHPBatchCancelRunByGo: Go cancels the batch PHP dispatched in
// u2_batch_cancel after its first job; the finally callback runs once, the
// remaining jobs still run and leave the batch as the cancel left it.
func TestPHPBatchCancelRunByGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "u2_batch_cancel.json")
	e.load("dispatched")
	e.clock.Set(e.snap("after the first job").Now())
	require.Equal(t, 1, e.runJobs("default", 1))
	e.compareWith(e.snap("after the first job"))

	cancelled := e.snap("cancelled")
	e.clock.Set(cancelled.Now())
	require.NoError(t, e.c.CancelBatch(e.ctx, 1))
	rec := &callbackRecorder{}
	e.runCallbacks("default", rec)
	e.compareWith(cancelled)

	final := e.snap("rest run")
	e.clock.Set(final.Now())
	assert.Equal(t, 2, e.runJobs("default", 100), "jobs run after the cancel")
	assert.Equal(t, phpCallbacks(t, final.Observed["marker lines"]), rec.all(), "callbacks and what they saw")
	e.compareWith(final)
}

// TestPHPChainRunByGo runs the chains Queuety PHP dispatched in v_chain
// through the Go engine: the first chain runs in order, the second stops
// at its failing job, whose catch handler runs once with what PHP's got.
func TestPHPChainRunByGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "v_chain.json")
	e.load("dispatched")
	final := e.snap("run")
	e.clock.Set(final.Now())
	assert.Equal(t, 5, e.runJobs("chain", 100), "jobs run (the sixth waits for a buried job)")
	rec := &callbackRecorder{}
	e.runCallbacks("chain", rec)
	assert.Equal(t, phpCallbacks(t, final.Observed["marker lines"]), rec.all(), "catch handler calls")
	e.compareWith(final)
}
