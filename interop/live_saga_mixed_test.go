package interop_test

import (
	"context"
	"encoding/json"
	"github.com/queuety/queuety-go/queuetytype"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
)

// The tests in this file run sagas and cancellations across a mixed fleet:
// compensations and cancel callbacks that are PHP classes (interop/php
// handlers.php: UndoStep, UndoOther, NoteCancel) and Go handlers
// (hGoUndo, hGoCancel) in one workflow, ended by a Go worker or by Queuety
// PHP. Both sides append what ran to one marker file, so the order across
// them is the order of the lines.

const (
	hGoUndo   = "GoUndoReserve" // a Go compensation, not a PHP class
	hGoCancel = "GoCancelNote"  // a Go cancel callback, not a PHP class
	phpQueue  = "php-callbacks" // the bridge queue
)

// sagaClient opens a Go client on the PHP driver's tables with the PHP
// bridge queue for callbacks (queuety.WithPHPCallbacks).
func sagaClient(t *testing.T, dsn string) *queuety.Client {
	t.Helper()
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)), queuety.WithPHPCallbacks(phpQueue))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// appendMarker returns a Go callback that appends {key: name, "state": s}
// to the marker file, as the PHP classes do.
func appendMarker(t *testing.T, path, key, name string) queuety.CallbackFunc {
	return func(_ context.Context, s queuety.State) error {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		public := map[string]any{}
		for k, v := range s {
			if !strings.HasPrefix(k, "_") {
				public[k] = v
			}
		}
		line, _ := json.Marshal(map[string]any{key: name, "state": public})
		_, err = f.Write(append(line, '\n'))
		return err
	}
}

// sagaCalls reads the marker file: "undo:<class>@<state>" and
// "cancel:<class>@<state>", in the order they ran.
func sagaCalls(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec struct {
			Undo   string         `json:"undo"`
			Cancel string         `json:"cancel"`
			State  map[string]any `json:"state"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "marker line %s", line)
		switch {
		case rec.Undo != "":
			out = append(out, "undo:"+rec.Undo+"@"+jsonOf(rec.State))
		case rec.Cancel != "":
			out = append(out, "cancel:"+rec.Cancel+"@"+jsonOf(rec.State))
		}
	}
	return out
}

// phpWork runs Queuety PHP's worker on queue until it is empty and returns
// how many jobs it processed.
func phpWork(php *livePHP, queue string) int {
	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--queue="+queue)
	return worked.Processed
}

// phpDispatch runs PHP code that echoes a workflow id and returns it.
func phpDispatch(t *testing.T, php *livePHP, code string) int64 {
	t.Helper()
	out := php.eval(code)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	return id
}

// assertNoBuriedCallbacks checks that no job of the test buried but the
// assertSagaEnded checks how a saga ended: its status, Queuety's end keys
// for cause ("failure" or "cancel") and no progress key left behind in its
// state, and no callback job buried except the one of the step named by
// except.
func assertSagaEnded(t *testing.T, c *queuety.Client, id int64, status queuetytype.WorkflowStatus, cause, except string) {
	t.Helper()
	wf, err := c.Workflow(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, status, wf.Status, "status")
	raw := string(wf.State)
	assert.Contains(t, raw, `"_compensated":true,"_compensation_cause":"`+cause+`"`, "Queuety's end keys")
	assert.NotContains(t, raw, "_compensation_next", "progress key left behind")
	assertNoBuriedCallbacks(t, c, except)
}

// failing step's.
func assertNoBuriedCallbacks(t *testing.T, c *queuety.Client, except ...string) {
	t.Helper()
	buried, err := c.ListJobs(context.Background(), queuetytype.JobFilter{Status: queuetytype.JobBuried})
	require.NoError(t, err)
	for _, j := range buried {
		if !assert.Contains(t, except, j.Handler, "buried job %d: %s", j.ID, j.ErrorMessage) {
			continue
		}
	}
}

// TestLiveGoFailedSagaRunsPHPCompensations: Queuety PHP dispatches a saga
// whose compensations are, oldest first, a PHP class, a Go handler and a
// PHP class. A Go worker runs its steps and fails it: the newest
// compensation goes to Queuety PHP's bridge queue, PHP runs it and hands
// the Go one back to Go, Go runs it and hands the oldest to PHP. Each runs
// once, newest first, with the state after its step, and the state ends
// compensated as Queuety leaves it.
func TestLiveGoFailedSagaRunsPHPCompensations(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "saga.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)
	c := sagaClient(t, dsn)

	id := phpDispatch(t, php, `echo \Queuety\Queuety::workflow('mixed_saga')
		->then('QueuetyGoInterop\Increment')->compensate_with('QueuetyGoInterop\UndoStep')
		->then('QueuetyGoInterop\Increment')->compensate_with('`+hGoUndo+`')
		->then('QueuetyGoInterop\Increment')->compensate_with('QueuetyGoInterop\UndoOther')
		->then('QueuetyGoInterop\FailStep')->then('QueuetyGoInterop\Finish')
		->compensate_on_failure()->dispatch(['order' => 7]);`)
	w := interopWorker(c)
	w.HandleCompensation(hGoUndo, appendMarker(t, marker, "undo", hGoUndo))

	_, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status after the Go worker")
	bridge, err := c.ListJobs(ctx, queuetytype.JobFilter{Queue: phpQueue})
	require.NoError(t, err)
	require.Len(t, bridge, 1, "the newest compensation handed to PHP")
	assert.Equal(t, engine.HandlerPHPWorkflowCallback, bridge[0].Handler, "bridge job handler")

	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP runs the newest compensation")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP runs the oldest compensation")
	// Nothing is left for either side.
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 0, phpWork(php, phpQueue), "bridge jobs left")

	assert.Equal(t, []string{
		`undo:QueuetyGoInterop\UndoOther@{"counter":3,"order":7}`,
		`undo:` + hGoUndo + `@{"counter":2,"order":7}`,
		`undo:QueuetyGoInterop\UndoStep@{"counter":1,"order":7}`,
	}, sagaCalls(t, marker), "compensations, newest first, each once, with the state after its step")
	assertSagaEnded(t, c, id, queuetytype.WorkflowFailed, "failure", `QueuetyGoInterop\FailStep`)
}

// TestLiveGoCancelRunsPHPCancelCallback: Queuety PHP dispatches a workflow
// with a Go compensation, a PHP compensation and a PHP on_cancel class and
// runs its first two steps; a Go process without workers (as the CLI's
// workflow cancel) cancels it. The PHP compensation runs on PHP, the Go
// one on the Go worker, newest first, then the PHP cancel callback runs on
// PHP, each once.
func TestLiveGoCancelRunsPHPCancelCallback(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "cancel.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)

	id := phpDispatch(t, php, `echo \Queuety\Queuety::workflow('mixed_cancel')
		->then('QueuetyGoInterop\Increment')->compensate_with('`+hGoUndo+`')
		->then('QueuetyGoInterop\Increment')->compensate_with('QueuetyGoInterop\UndoStep')
		->then('QueuetyGoInterop\Finish')
		->on_cancel('QueuetyGoInterop\NoteCancel')->dispatch(['order' => 7]);`)
	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--max-jobs=2")
	require.Equal(t, 2, worked.Processed, "steps PHP ran before the cancel")

	operator := sagaClient(t, dsn) // no workers: it cannot tell Go handlers from PHP classes
	require.NoError(t, operator.CancelWorkflow(ctx, id))

	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP runs the newest compensation and hands the Go one back")
	c := sagaClient(t, dsn)
	w := interopWorker(c)
	w.HandleCompensation(hGoUndo, appendMarker(t, marker, "undo", hGoUndo))
	_, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP runs the cancel callback")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 0, phpWork(php, phpQueue), "bridge jobs left")

	assert.Equal(t, []string{
		`undo:QueuetyGoInterop\UndoStep@{"counter":2,"order":7}`,
		`undo:` + hGoUndo + `@{"counter":1,"order":7}`,
		`cancel:QueuetyGoInterop\NoteCancel@{"counter":2,"order":7}`,
	}, sagaCalls(t, marker), "compensations newest first, then the cancel callback, each once")
	assertSagaEnded(t, c, id, queuetytype.WorkflowCancelled, "cancel", `QueuetyGoInterop\Finish`)
}

// TestLivePHPFailedSagaRunsGoCompensations: Queuety PHP runs a saga whose
// compensations are, oldest first, a Go handler, a PHP class and a Go
// handler, and fails it. PHP runs its class and skips the Go names (it
// still writes _compensated); a Go worker's sweep hands the workflow to
// PHP's bridge, which starts the chain of the names that are not PHP
// classes, and Go workers run them newest first, each once, however often
// they sweep. A Go twin of the PHP class does not run it again.
func TestLivePHPFailedSagaRunsGoCompensations(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "saga.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)
	c := sagaClient(t, dsn)
	const hGoUndoOther = "GoUndoShipment"

	id := phpDispatch(t, php, `echo \Queuety\Queuety::workflow('php_saga')
		->then('QueuetyGoInterop\Increment')->compensate_with('`+hGoUndo+`')
		->then('QueuetyGoInterop\Increment')->compensate_with('QueuetyGoInterop\UndoStep')
		->then('QueuetyGoInterop\Increment')->compensate_with('`+hGoUndoOther+`')
		->then('QueuetyGoInterop\FailStep')->then('QueuetyGoInterop\Finish')
		->compensate_on_failure()->dispatch(['order' => 7]);`)
	assert.Equal(t, 4, phpWork(php, "default"), "steps PHP ran")
	wf, err := c.Workflow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status after PHP")
	require.Contains(t, string(wf.State), `"_compensated":true`, "PHP's end keys")
	require.Equal(t, []string{`undo:QueuetyGoInterop\UndoStep@{"counter":2,"order":7}`}, sagaCalls(t, marker), "PHP ran its class only")
	// The sweep gate's read sees the failure PHP wrote, within the
	// workflow-callback sweep's lookback.
	due, known, err := clientseam.Engine(c).MaintenanceDue(ctx)
	require.NoError(t, err)
	require.True(t, known, "the store has the gate's read")
	assert.WithinDuration(t, time.Now(), due.Failed, time.Hour, "latest failure")

	w := interopWorker(c)
	// UndoStep is a Go twin too: PHP ran the class, so Go must not run it again.
	for _, h := range []string{hGoUndo, hGoUndoOther, `QueuetyGoInterop\UndoStep`} {
		w.HandleCompensation(h, appendMarker(t, marker, "undo", h))
	}
	sweeper := deadline.New(c)
	n, err := sweeper.WorkflowCallbacks(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "workflows the sweep took")
	n, err = sweeper.WorkflowCallbacks(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a second sweep")
	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP's bridge starts the Go names' chain")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	n, err = deadline.New(sagaClient(t, dsn)).WorkflowCallbacks(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a sweep after the chain ended")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)

	assert.Equal(t, []string{
		`undo:QueuetyGoInterop\UndoStep@{"counter":2,"order":7}`,
		`undo:` + hGoUndoOther + `@{"counter":3,"order":7}`,
		`undo:` + hGoUndo + `@{"counter":1,"order":7}`,
	}, sagaCalls(t, marker), "PHP's class when PHP failed it, then the Go compensations newest first, each once")
	assertSagaEnded(t, c, id, queuetytype.WorkflowFailed, "failure", `QueuetyGoInterop\FailStep`)
}

// TestLivePHPCancelRunsGoCancelCallback: Queuety PHP cancels a workflow
// whose compensations are a PHP class and a Go handler and whose on_cancel
// is a Go handler. PHP runs its class; a Go worker's sweep, through PHP's
// bridge, runs the Go compensation and then the Go cancel callback, each
// once.
func TestLivePHPCancelRunsGoCancelCallback(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	marker := filepath.Join(t.TempDir(), "cancel.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)
	c := sagaClient(t, dsn)

	id := phpDispatch(t, php, `echo \Queuety\Queuety::workflow('php_cancel')
		->then('QueuetyGoInterop\Increment')->compensate_with('QueuetyGoInterop\UndoStep')
		->then('QueuetyGoInterop\Increment')->compensate_with('`+hGoUndo+`')
		->then('QueuetyGoInterop\Finish')
		->on_cancel('`+hGoCancel+`')->dispatch(['order' => 7]);`)
	var worked struct {
		Processed int `json:"processed"`
	}
	php.runJSON(&worked, "work", "--max-jobs=2")
	require.Equal(t, 2, worked.Processed, "steps PHP ran before the cancel")
	php.eval(`\Queuety\Queuety::cancel_workflow(` + strconv.FormatInt(id, 10) + `);`)
	require.Equal(t, []string{`undo:QueuetyGoInterop\UndoStep@{"counter":1,"order":7}`}, sagaCalls(t, marker), "PHP ran its class only")

	w := interopWorker(c)
	w.HandleCompensation(hGoUndo, appendMarker(t, marker, "undo", hGoUndo))
	w.HandleDeadline(hGoCancel, appendMarker(t, marker, "cancel", hGoCancel))
	n, err := deadline.New(c).WorkflowCallbacks(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "workflows the sweep took")
	assert.Equal(t, 1, phpWork(php, phpQueue), "PHP's bridge starts the Go names' chain")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	n, err = deadline.New(c).WorkflowCallbacks(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a sweep after the chain ended")
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)

	assert.Equal(t, []string{
		`undo:QueuetyGoInterop\UndoStep@{"counter":1,"order":7}`,
		`undo:` + hGoUndo + `@{"counter":2,"order":7}`,
		`cancel:` + hGoCancel + `@{"counter":2,"order":7}`,
	}, sagaCalls(t, marker), "PHP's class, then the Go compensation and the Go cancel callback, each once")
	assertSagaEnded(t, c, id, queuetytype.WorkflowCancelled, "cancel", `QueuetyGoInterop\Finish`)
}
