package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// hStreamWords is interop/php/handlers.php's streaming step; streamWords
// is its Go twin. hTraceMeta is the step that records trace metadata.
const (
	hStreamWords = `QueuetyGoInterop\StreamWords`
	hTraceMeta   = `QueuetyGoInterop\TraceMeta`
)

// streamWords streams the words of state "words" after the chunks stored
// so far, one chunk ("word ") each, and returns them joined as "text", as
// the PHP StreamWords does. Before streaming chunk stopAt (when not
// negative) it calls stop, which returns the attempt's error or blocks.
func streamWords(stopAt int, stop func(ctx context.Context) error) queuety.StepFunc {
	return func(ctx context.Context, s queuety.State) (queuety.State, error) {
		done, err := queuety.StreamedChunks(ctx)
		if err != nil {
			return nil, err
		}
		words := strings.Fields(s.String("words"))
		for i := len(done); i < len(words); i++ {
			if i == stopAt {
				if err := stop(ctx); err != nil {
					return nil, err
				}
			}
			if err := queuety.StreamChunk(ctx, words[i]+" "); err != nil {
				return nil, err
			}
		}
		all, err := queuety.StreamedChunks(ctx)
		return queuety.State{"text": strings.Join(all, "")}, err
	}
}

// streamRows reads a job's chunk rows and its workflow's step_completed
// event.
func streamRows(t *testing.T, c *queuety.Client, wfID int64) (job *driver.Job, chunks []*driver.Chunk, completed *driver.WorkflowEvent) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		jobs, err := tx.JobListByWorkflow(ctx, wfID, nil, driver.LockNone)
		if err != nil || len(jobs) != 1 {
			return fmt.Errorf("jobs of workflow %d: %v (%d)", wfID, err, len(jobs))
		}
		job = jobs[0]
		if chunks, err = tx.ChunkList(ctx, job.ID); err != nil {
			return err
		}
		events, err := tx.EventList(ctx, wfID)
		for _, ev := range events {
			if ev.Event == driver.EventStepCompleted {
				completed = ev
			}
		}
		return err
	}))
	return job, chunks, completed
}

// laterWorker is a Go worker whose clock is an hour ahead, so a retry's
// backoff or a dead worker's claim is already past.
func laterWorker(t *testing.T, dsn, queue string) (*queuety.Client, *worker.Worker) {
	t.Helper()
	c, err := queuety.Open(context.Background(), dsn, queuety.WithClock(queuety.NewFakeClock(time.Now().Add(time.Hour))),
		queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, worker.New(c, worker.Queues(queue), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
}

// chunkRef is the reference Queuety PHP's worker records per chunk in a
// streaming step's step_completed event.
func chunkRefs(jobID, wfID int64, n int) string {
	ref := fmt.Sprintf(`{"job_id":%d,"workflow_id":%d,"step_index":0,"chunk_index":null,"content":null}`, jobID, wfID)
	return "[" + strings.TrimSuffix(strings.Repeat(ref+",", n), ",") + "]"
}

// TestLiveStreamingPHPAndGoResumeEachOther: a stream Queuety PHP started
// and broke off is finished by a Go worker from PHP's chunks, and one a Go
// worker started is finished by PHP from Go's. Both write the chunk rows
// and the step_completed event PHP writes when it streams alone.
func TestLiveStreamingPHPAndGoResumeEachOther(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	words := queuety.State{"words": "one two three four"}

	// PHP alone: the reference rows.
	var ref struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
$id = \Queuety\Queuety::workflow( 'stream' )->then( \QueuetyGoInterop\StreamWords::class )->on_queue( 'st-php' )->dispatch( array( 'words' => 'one two three four' ) );
\Queuety\Queuety::flush_queue( 'st-php' );
echo json_encode( array( 'id' => $id ) );`)), &ref))
	refJob, refChunks, refDone := streamRows(t, c, ref.ID)
	require.Equal(t, queuetytype.JobCompleted, refJob.Status)
	assert.Empty(t, refChunks, "PHP deletes the chunks of a completed stream")
	require.NotNil(t, refDone)
	require.Equal(t, chunkRefs(refJob.ID, ref.ID, 4), string(refDone.Chunks), "PHP's chunks column")

	t.Run("PHP starts, Go resumes", func(t *testing.T) {
		var started struct {
			ID int64 `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(php.eval(`
$id = \Queuety\Queuety::workflow( 'stream' )->then( \QueuetyGoInterop\StreamWords::class )->on_queue( 'st-a' )->dispatch( array( 'words' => 'one two three four' ) );
putenv( 'QUEUETY_INTEROP_STREAM_FAIL_AFTER=2' );
\Queuety\Queuety::flush_queue( 'st-a' );
echo json_encode( array( 'id' => $id ) );`)), &started))
		job, chunks, _ := streamRows(t, c, started.ID)
		require.Equal(t, queuetytype.JobPending, job.Status, "PHP's attempt failed and is retried")
		require.Len(t, chunks, 2, "PHP's chunks")
		assert.Equal(t, []string{"one ", "two "}, []string{chunks[0].Content, chunks[1].Content})

		later, w := laterWorker(t, dsn, "st-a")
		var seen []string
		w.HandleStep(hStreamWords, func(ctx context.Context, s queuety.State) (queuety.State, error) {
			seen, _ = queuety.StreamedChunks(ctx)
			return streamWords(-1, nil)(ctx, s)
		})
		_, err := w.RunOnce(ctx, 30*time.Second)
		require.NoError(t, err)
		wf, err := later.Workflow(ctx, started.ID)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status)
		assert.Equal(t, []string{"one ", "two "}, seen, "Go's attempt starts from PHP's chunks")
		st, err := later.State(ctx, started.ID)
		require.NoError(t, err)
		assert.Equal(t, "one two three four ", st["text"])
		job, chunks, done := streamRows(t, c, started.ID)
		assert.Empty(t, chunks, "Go deletes the chunks once the step completed")
		require.NotNil(t, done)
		assert.Equal(t, chunkRefs(job.ID, started.ID, 4), string(done.Chunks), "the chunks column PHP writes")
		assert.Equal(t, string(refDone.Output), string(done.Output), "output")
		assert.Equal(t, string(refDone.StateAfter), string(done.StateAfter), "state_after")
	})

	t.Run("Go starts, PHP resumes", func(t *testing.T) {
		// The Go side's clock is two hours behind: its retry, an hour after
		// the failure, is already due for PHP and not yet for Go.
		earlier, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(time.Now().Add(-2*time.Hour))),
			queuety.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		t.Cleanup(func() { earlier.Close() })
		id, err := builder.Workflow("stream").OnQueue("st-b").Then(hStreamWords, builder.Retry(3, queuety.BackoffSeconds(3600))).Dispatch(ctx, earlier, words)
		require.NoError(t, err)
		w := worker.New(earlier, worker.Queues("st-b"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
		w.HandleStep(hStreamWords, streamWords(2, func(context.Context) error { return fmt.Errorf("stream interrupted") }))
		_, err = w.RunOnce(ctx, 30*time.Second)
		require.NoError(t, err)
		job, chunks, _ := streamRows(t, c, id)
		require.Equal(t, queuetytype.JobPending, job.Status, "Go's attempt failed and is retried")
		require.Len(t, chunks, 2, "Go's chunks")
		for i, ch := range chunks {
			assert.Equal(t, i, ch.ChunkIndex)
			assert.Equal(t, id, ch.WorkflowID)
		}

		php.run("work", "--queue=st-b")
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "PHP finished the stream")
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "one two three four ", st["text"], "PHP's on_complete saw Go's chunks first")
		job, chunks, done := streamRows(t, c, id)
		assert.Empty(t, chunks)
		require.NotNil(t, done)
		assert.Equal(t, chunkRefs(job.ID, id, 4), string(done.Chunks))
	})
}

// envStreamChild makes the test binary a Go worker that streams two
// chunks of a TestLiveStreamingSurvivesSIGKILL workflow and then hangs
// until it is killed. Its value is the DSN.
const envStreamChild = "QUEUETY_INTEROP_STREAM_CHILD"

// TestStreamChildWorker is the child process of
// TestLiveStreamingSurvivesSIGKILL; it does nothing in a normal run.
func TestStreamChildWorker(t *testing.T) {
	dsn := os.Getenv(envStreamChild)
	if dsn == "" {
		t.Skip("runs only as the child of TestLiveStreamingSurvivesSIGKILL")
	}
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	w := worker.New(c, worker.Queues("st-kill"), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleStep(hStreamWords, streamWords(2, func(ctx context.Context) error {
		select {} // hang mid-stream until the parent kills the process
	}))
	_ = w.Run(context.Background())
}

// TestLiveStreamingSurvivesSIGKILL: a Go worker process streams two chunks
// and is killed with SIGKILL mid-stream. The chunks stay; once the dead
// worker's claim is recovered, another Go worker resumes from them and
// completes the step, and the rows are those Queuety PHP writes.
func TestLiveStreamingSurvivesSIGKILL(t *testing.T) {
	if os.Getenv(envStreamChild) != "" {
		t.Skip("child process")
	}
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	_ = newLivePHP(t, prefix) // the live interop suite's skip rule
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	id, err := builder.Workflow("stream").OnQueue("st-kill").Then(hStreamWords).Dispatch(ctx, c, queuety.State{"words": "one two three four five"})
	require.NoError(t, err)

	exe, err := os.Executable()
	require.NoError(t, err)
	child := exec.Command(exe, "-test.run=^TestStreamChildWorker$", "-test.count=1")
	child.Env = append(os.Environ(), envStreamChild+"="+dsn)
	require.NoError(t, child.Start())
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	t.Cleanup(func() { _ = child.Process.Kill() })

	// Wait for the second chunk row, then kill the worker mid-stream.
	deadline := time.After(30 * time.Second)
	for {
		_, chunks, _ := streamRows(t, c, id)
		if len(chunks) >= 2 {
			break
		}
		select {
		case err := <-exited:
			require.FailNow(t, "the child worker exited before streaming", "%v", err)
		case <-deadline:
			require.FailNow(t, "the child worker streamed no two chunks in 30s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, child.Process.Signal(os.Kill))
	<-exited
	job, chunks, _ := streamRows(t, c, id)
	require.Equal(t, queuetytype.JobProcessing, job.Status, "the dead worker's claim")
	require.Len(t, chunks, 2)

	later, w := laterWorker(t, dsn, "st-kill")
	n, err := later.RecoverStale(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the dead worker's claim is recovered")
	var seen []string
	w.HandleStep(hStreamWords, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		seen, _ = queuety.StreamedChunks(ctx)
		return streamWords(-1, nil)(ctx, s)
	})
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	wf, err := later.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status)
	assert.Equal(t, []string{"one ", "two "}, seen, "the new attempt starts from the killed worker's chunks")
	st, err := later.State(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "one two three four five ", st["text"])
	job, chunks, done := streamRows(t, c, id)
	assert.Empty(t, chunks)
	require.NotNil(t, done)
	assert.Equal(t, chunkRefs(job.ID, id, 5), string(done.Chunks))
}

// TestLiveTraceMetadataMatchesPHP runs the step that records trace
// metadata in Queuety PHP and in a Go worker; their step_completed rows
// hold the same input, output, context, artifacts and state.
func TestLiveTraceMetadataMatchesPHP(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	var phpRun struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
$id = \Queuety\Queuety::workflow( 'traced' )->then( \QueuetyGoInterop\TraceMeta::class )->on_queue( 'tr-php' )->dispatch( array( 'post_id' => 7 ) );
\Queuety\Queuety::flush_queue( 'tr-php' );
echo json_encode( array( 'id' => $id ) );`)), &phpRun))

	goID, err := builder.Workflow("traced").OnQueue("tr-go").Then(hTraceMeta).Dispatch(ctx, c, queuety.State{"post_id": 7})
	require.NoError(t, err)
	w := worker.New(c, worker.Queues("tr-go"), worker.NoMaintenance(), worker.WithLogger(quietLog()))
	w.HandleStep(hTraceMeta, func(ctx context.Context, s queuety.State) (queuety.State, error) {
		if err := queuety.TraceInput(ctx, map[string]any{"resolved": map[string]any{"id": s["post_id"]}}); err != nil {
			return nil, err
		}
		if err := queuety.TraceContext(ctx, map[string]any{"ability": "content/load-post"}); err != nil {
			return nil, err
		}
		if err := queuety.TraceOutput(ctx, map[string]any{"post": "Hello"}); err != nil {
			return nil, err
		}
		return queuety.State{"result": "done", queuety.TraceOutputKey: map[string]any{
			"context":   map[string]any{"node_id": "loadPost"},
			"artifacts": []any{map[string]any{"key": "brief", "kind": "markdown"}, "not an array", []any{"a list"}},
		}}, nil
	})
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)

	events := func(id int64) []*driver.WorkflowEvent {
		var out []*driver.WorkflowEvent
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.EventList(ctx, id); return err }))
		return out
	}
	pe, ge := events(phpRun.ID), events(goID)
	require.Len(t, pe, 2, "PHP's events")
	require.Len(t, ge, 2, "Go's events")
	for i := range pe {
		p, g := pe[i], ge[i]
		assert.Equal(t, p.Event, g.Event)
		for _, col := range []struct {
			name string
			p, g []byte
		}{{"input", p.Input, g.Input}, {"output", p.Output, g.Output}, {"state_before", p.StateBefore, g.StateBefore},
			{"state_after", p.StateAfter, g.StateAfter}, {"context", p.Context, g.Context}, {"artifacts", p.Artifacts, g.Artifacts},
			{"chunks", p.Chunks, g.Chunks}} {
			assert.Equal(t, string(col.p), string(col.g), "%s: %s", p.Event, col.name)
		}
	}
	assert.Equal(t, `{"resolved":{"id":7}}`, string(pe[1].Input), "PHP's trace input")
	assert.Equal(t, `{"ability":"content\/load-post","node_id":"loadPost"}`, string(pe[1].Context), "PHP's trace context")
	assert.Equal(t, `[{"key":"brief","kind":"markdown"},[]]`, string(pe[1].Artifacts), "PHP's artifacts: a scalar dropped, a list emptied")
	for _, id := range []int64{phpRun.ID, goID} {
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		assert.NotContains(t, st, queuety.TraceOutputKey, "workflow %d", id)
	}
}
