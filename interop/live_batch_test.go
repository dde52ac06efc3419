package interop_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// readMarker returns the callback lines PHP's classes wrote to the marker
// file.
func readMarker(t *testing.T, path string) []callbackView {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []callbackView
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var v callbackView
		require.NoError(t, json.Unmarshal([]byte(line), &v), "marker line %s", line)
		if v.Callback != "" || v.ChainCatch != "" {
			out = append(out, v)
		}
	}
	return out
}

// goJobTwins registers the Go twins of OkJob and FailJob.
func goJobTwins(w *worker.Worker) {
	w.HandleJob(hOkJob, func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob(hFailJob, func(_ context.Context, p queuety.Payload) error { return failJobErr(p) })
}

// TestLiveBatchFinishedByGoFiresPHPCallbacks: Queuety PHP dispatches a
// batch with PHP callback classes (then, catch, finally, allow_failures)
// and a chain with a PHP catch class; Go workers run every job. The Go
// client hands the callbacks to PHP (WithPHPBatchCallbacks): each is one
// job for the bridge class QueuetyGo\BatchCallback, which a PHP worker
// runs, calling each PHP class once with the batch as Queuety's
// BatchManager would have passed it.
func TestLiveBatchFinishedByGoFiresPHPCallbacks(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "marker.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)), queuety.WithPHPBatchCallbacks("php-callbacks"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	var ids struct {
		Batch int64 `json:"batch"`
		Chain int64 `json:"chain"`
	}
	out := php.eval(`use Queuety\Queuety; use QueuetyGoInterop\{OkJob, FailJob, BatchThen, BatchCatch, BatchFinally, ChainCaught};
$b = Queuety::create_batch([
	['handler' => OkJob::class, 'payload' => ['n' => 1]],
	['handler' => OkJob::class, 'payload' => ['n' => 2]],
	['handler' => FailJob::class, 'payload' => ['n' => 3]],
	['handler' => OkJob::class, 'payload' => ['n' => 4]],
])->name('live')->on_queue('go-jobs')->then(BatchThen::class)->catch(BatchCatch::class)->finally(BatchFinally::class)->allow_failures()->dispatch();
$c = Queuety::chain([
	['handler' => OkJob::class, 'payload' => ['n' => 5]],
	['handler' => FailJob::class, 'payload' => ['n' => 6]],
	['handler' => OkJob::class, 'payload' => ['n' => 7]],
])->on_queue('go-jobs')->catch(ChainCaught::class)->dispatch();
echo json_encode(['batch' => $b->id, 'chain' => $c]);`)
	require.NoError(t, json.Unmarshal([]byte(out), &ids), "PHP printed %s", out)

	w := worker.New(c, worker.Queues("go-jobs"), worker.Concurrency(4), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	goJobTwins(w)
	st, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(6), st.Claimed, "jobs Go ran (the chain's third waits for a buried job)")
	b, err := c.Batch(ctx, ids.Batch)
	require.NoError(t, err)
	require.True(t, b.Finished(), "batch finished by Go")
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: hFailJob}) // the batch's, then the chain's
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	failedBatchJob, failedChainJob := jobs[0].ID, jobs[1].ID
	assert.Equal(t, []int64{failedBatchJob}, b.FailedJobIDs, "failed_job_ids")
	assert.Equal(t, 0, b.PendingJobs, "pending_jobs")

	bridge, err := c.ListJobs(ctx, driver.JobFilter{Queue: "php-callbacks"})
	require.NoError(t, err)
	require.Len(t, bridge, 4, "jobs handed to PHP: catch, then, finally, chain catch")
	for _, j := range bridge {
		assert.Equal(t, batch.HandlerPHPCallback, j.Handler, "bridge job %d", j.ID)
	}
	assert.Empty(t, readMarker(t, marker), "no PHP callback ran before PHP worked the queue")

	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--queue=php-callbacks")
	assert.Equal(t, 4, worked.Processed, "bridge jobs PHP ran")
	bridge, err = c.ListJobs(ctx, driver.JobFilter{Queue: "php-callbacks"})
	require.NoError(t, err)
	for _, j := range bridge {
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "bridge job %d after PHP ran it: %s", j.ID, j.ErrorMessage)
	}

	calls := map[string][]callbackView{}
	for _, v := range readMarker(t, marker) {
		calls[v.Callback+v.ChainCatch] = append(calls[v.Callback+v.ChainCatch], v)
	}
	require.Len(t, calls, 4, "PHP classes called: %v", calls)
	for _, name := range []string{hBatchThen, hBatchCatch, hBatchFinally} {
		require.Len(t, calls[name], 1, "%s calls", name)
		v := calls[name][0].Batch
		assert.Equal(t, ids.Batch, v.ID, "%s: batch id", name)
		assert.Equal(t, "live", *v.Name, "%s: name", name)
		assert.Equal(t, 4, v.TotalJobs, "%s: total_jobs", name)
		assert.Equal(t, 1, v.FailedJobs, "%s: failed_jobs", name)
		assert.Equal(t, []int64{failedBatchJob}, v.FailedJobIDs, "%s: failed_job_ids", name)
		assert.False(t, v.Cancelled, "%s: cancelled", name)
	}
	// then and finally saw the finished batch; catch saw it right after
	// the failure, whenever that came among the four jobs.
	for _, name := range []string{hBatchThen, hBatchFinally} {
		v := calls[name][0].Batch
		assert.Equal(t, 0, v.PendingJobs, "%s: pending_jobs", name)
		assert.Equal(t, 100, v.Progress, "%s: progress", name)
		assert.True(t, v.Finished, "%s: finished", name)
	}
	require.Len(t, calls[hChainCaught], 1, "chain catch calls")
	assert.Equal(t, callbackView{ChainCatch: hChainCaught, JobID: failedChainJob, Handler: hFailJob, Error: "job 6 failed"},
		calls[hChainCaught][0], "what PHP's chain catch class got")

	// PHP reads the batch Go finished with its own code.
	var seen struct {
		Progress    int  `json:"progress"`
		Finished    bool `json:"finished"`
		HasFailures bool `json:"has_failures"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`$b = \Queuety\Queuety::find_batch(`+itoa(ids.Batch)+`);
echo json_encode(['progress' => $b->progress(), 'finished' => $b->finished(), 'has_failures' => $b->has_failures()]);`)), &seen))
	assert.Equal(t, 100, seen.Progress, "progress, as PHP reads it")
	assert.True(t, seen.Finished, "finished, as PHP reads it")
	assert.True(t, seen.HasFailures, "has_failures, as PHP reads it")
}

// TestLiveGoBatchFinishedByPHPFiresGoCallbacks: the Go client dispatches
// a batch whose callbacks are Go handlers, and a chain whose catch is a
// PHP class; Queuety PHP's worker runs every job. PHP calls the chain's
// catch class itself and skips the batch callbacks (no such PHP class);
// the next sweep of a Go worker that registered them enqueues each one,
// once, and the worker runs it.
func TestLiveGoBatchFinishedByPHPFiresGoCallbacks(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	marker := filepath.Join(t.TempDir(), "marker.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)

	batch, err := c.NewBatch(
		queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": 1}},
		queuety.JobRequest{Handler: hFailJob, Payload: queuety.State{"n": 2}, Options: []queuety.JobOption{queuety.MaxAttempts(1)}},
		queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": 3}},
	).Name("go batch").OnQueue("to-php").Then("go_then").Catch("go_catch").Finally("go_finally").AllowFailures().Dispatch(ctx)
	require.NoError(t, err)
	chain, err := c.Chain(
		queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": 4}},
		queuety.JobRequest{Handler: hFailJob, Payload: queuety.State{"n": 5}},
		queuety.JobRequest{Handler: hOkJob, Payload: queuety.State{"n": 6}},
	).OnQueue("to-php").Catch(hChainCaught).DispatchIDs(ctx)
	require.NoError(t, err)

	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--queue=to-php")
	assert.Equal(t, 5, worked.Processed, "jobs PHP ran (the chain's third waits for a buried job)")
	b, err := c.Batch(ctx, batch)
	require.NoError(t, err)
	require.True(t, b.Finished(), "batch finished by PHP")
	assert.Equal(t, 1, b.FailedJobs, "failed_jobs")
	third, err := c.Job(ctx, chain[2])
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, third.Status, "the chain stopped at its failure")
	assert.Equal(t, []callbackView{{ChainCatch: hChainCaught, JobID: chain[1], Handler: hFailJob, Error: "job 5 failed"}},
		readMarker(t, marker), "PHP called the chain's catch class of a Go chain")
	evs, err := c.BatchEvents(ctx, batch)
	require.NoError(t, err)
	assert.Empty(t, evs, "no Go event before a Go sweep")

	var mu sync.Mutex
	got := map[string]*queuety.Batch{}
	runs := map[string]int{}
	w := worker.New(c, worker.Queues("go-callbacks"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	for _, name := range []string{"go_then", "go_catch", "go_finally"} {
		w.HandleBatchCallback(name, func(_ context.Context, b *queuety.Batch) error {
			mu.Lock()
			defer mu.Unlock()
			got[name], runs[name] = b, runs[name]+1
			return nil
		})
	}
	for range 2 { // RunOnce sweeps first, then runs what the sweep enqueued
		st, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		t.Logf("sweep enqueued %d batch callback(s); worker ran %d job(s)", st.Swept.BatchCallbacks, st.Succeeded)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"go_then": 1, "go_catch": 1, "go_finally": 1}, runs, "Go callbacks, each once")
	for name, b := range got {
		assert.Equal(t, batch, b.ID, "%s: batch", name)
		assert.Equal(t, 0, b.PendingJobs, "%s: pending_jobs (PHP finished it before the sweep)", name)
		assert.Equal(t, 1, b.FailedJobs, "%s: failed_jobs", name)
		assert.True(t, b.Finished(), "%s: finished", name)
	}
	assert.Equal(t, "catch", got["go_catch"].Event, "event of the catch callback")
	evs, err = c.BatchEvents(ctx, batch)
	require.NoError(t, err)
	require.Len(t, evs, 3, "event rows")
	for _, ev := range evs {
		assert.Equal(t, "go", ev.Runtime, "%s runtime", ev.Event)
	}
}
