package interop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestLiveCompensation: a saga built with compensate_with and
// compensate_on_failure by Queuety PHP and by the Go builder stores the
// same state byte for byte; Go workers run PHP's saga, whose third step
// fails, and undo the first two steps newest first, leaving Queuety's
// _compensation_stack, _compensated and _compensation_cause; PHP refuses to
// retry the workflow Go compensated.
func TestLiveCompensation(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)

	out := php.eval(`echo \Queuety\Queuety::workflow('saga')
		->then('QueuetyGoInterop\Increment')->compensate_with('App\Undo\First')
		->then('QueuetyGoInterop\Increment')->compensate_with('App\Undo\Second')
		->then('QueuetyGoInterop\FailStep')->then('QueuetyGoInterop\Finish')
		->compensate_on_failure()->dispatch(['order' => 7]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	goID, err := builder.Workflow("saga").
		Then(`QueuetyGoInterop\Increment`).CompensateWith(`App\Undo\First`).
		Then(`QueuetyGoInterop\Increment`).CompensateWith(`App\Undo\Second`).
		Then(`QueuetyGoInterop\FailStep`).Then(`QueuetyGoInterop\Finish`).
		CompensateOnFailure().Dispatch(ctx, c, queuety.State{"order": 7})
	require.NoError(t, err)
	phpWF, err := c.Workflow(ctx, phpID)
	require.NoError(t, err)
	goWF, err := c.Workflow(ctx, goID)
	require.NoError(t, err)
	assert.Equal(t, string(phpWF.State), string(goWF.State), "stored state at dispatch, PHP's (expected) and Go's (actual)")
	require.NoError(t, c.CancelWorkflow(ctx, goID)) // only PHP's runs below

	var mu sync.Mutex
	var undone []string
	w := interopWorker(c)
	for _, h := range []string{`App\Undo\First`, `App\Undo\Second`} {
		w.HandleCompensation(h, func(_ context.Context, s queuety.State) error {
			mu.Lock()
			defer mu.Unlock()
			n, _ := s.Int("counter")
			undone = append(undone, h+"@"+strconv.FormatInt(n, 10))
			return nil
		})
	}
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	wf, err := c.Workflow(ctx, phpID)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	mu.Lock()
	assert.Equal(t, []string{`App\Undo\Second@2`, `App\Undo\First@1`}, undone, "compensations newest first, each with the state after its step")
	mu.Unlock()
	raw := string(wf.State)
	assert.Contains(t, raw, `"_compensation_stack":[{"step_index":0,"handler":"App\\Undo\\First","payload":[],"state":{"order":7,"counter":1}},`+
		`{"step_index":1,"handler":"App\\Undo\\Second","payload":[],"state":{"order":7,"counter":2}}]`, "stack in Queuety's shape")
	assert.Contains(t, raw, `"_compensated":true,"_compensation_cause":"failure"`, "Queuety's end keys")
	assert.NotContains(t, raw, "_compensation_next", "Go's progress key left behind")

	// PHP reads the compensation as done: it refuses to retry.
	_, retryErr := php.exec("-r", "require '"+strings.ReplaceAll(php.lib, "'", `\'`)+"'; \\QueuetyGoInterop\\boot(); "+
		`\Queuety\Queuety::retry_workflow(`+strconv.FormatInt(phpID, 10)+`);`)
	require.Error(t, retryErr, "PHP retried a workflow Go compensated")
	assert.Contains(t, retryErr.Error(), "has already been compensated and cannot be retried", "PHP's refusal")
}

// TestLiveCompensationRunByPHP: a saga the Go builder dispatched, with
// compensation handlers that are PHP classes, is run by Queuety PHP: its
// third step fails and PHP runs the compensations newest first with the
// state after each step, reading the stack Go's rows describe. The state
// PHP leaves equals the one Go leaves for the same saga run by Go workers.
func TestLiveCompensationRunByPHP(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	marker := filepath.Join(t.TempDir(), "undo.jsonl")
	php.env = append(php.env, "QUEUETY_INTEROP_MARKER="+marker)

	saga := func() *builder.Builder {
		return builder.Workflow("saga").
			Then(`QueuetyGoInterop\Increment`).CompensateWith(`QueuetyGoInterop\UndoStep`).
			Then(`QueuetyGoInterop\Increment`).CompensateWith(`QueuetyGoInterop\UndoOther`).
			Then(`QueuetyGoInterop\FailStep`).Then(`QueuetyGoInterop\Finish`).
			CompensateOnFailure()
	}
	byPHP, err := saga().Dispatch(ctx, c, queuety.State{"order": 7})
	require.NoError(t, err)
	php.run("work")
	raw, err := os.ReadFile(marker)
	require.NoError(t, err, "PHP ran no compensation")
	var calls []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec struct {
			Undo  string         `json:"undo"`
			State map[string]any `json:"state"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		calls = append(calls, rec.Undo+"@"+jsonOf(rec.State))
	}
	assert.Equal(t, []string{`QueuetyGoInterop\UndoOther@{"counter":2,"order":7}`, `QueuetyGoInterop\UndoStep@{"counter":1,"order":7}`}, calls,
		"PHP's compensations, newest first, each with the state after its step")

	byGo, err := saga().Dispatch(ctx, c, queuety.State{"order": 7})
	require.NoError(t, err)
	w := interopWorker(c)
	for _, h := range []string{`QueuetyGoInterop\UndoStep`, `QueuetyGoInterop\UndoOther`} {
		w.HandleCompensation(h, func(context.Context, queuety.State) error { return nil })
	}
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	phpWF, err := c.Workflow(ctx, byPHP)
	require.NoError(t, err)
	goWF, err := c.Workflow(ctx, byGo)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowFailed, phpWF.Status, "PHP-run status")
	assert.Equal(t, queuetytype.WorkflowFailed, goWF.Status, "Go-run status")
	assert.Equal(t, string(phpWF.State), string(goWF.State), "final stored state, PHP-run (expected) and Go-run (actual)")
}
