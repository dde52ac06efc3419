package interop_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestLiveRewindAndFork: Queuety PHP rewinds and forks a workflow Go ran,
// and Go rewinds and forks one PHP ran; the rewound and forked workflows
// run to completion on the other side, and both sides read the same state
// after each step (workflow_state_at).
func TestLiveRewindAndFork(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	php := newLivePHP(t, prefix)
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleStep(`QueuetyGoInterop\Increment`, func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	})
	w.HandleStep(`QueuetyGoInterop\Finish`, func(context.Context, queuety.State) (queuety.State, error) {
		return queuety.State{"finished": true}, nil
	})
	runGo := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	state := func(id int64) queuety.State {
		t.Helper()
		st, err := c.State(ctx, id)
		require.NoError(t, err)
		return st
	}
	done := func(id int64) {
		t.Helper()
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuety.WorkflowCompleted, wf.Status, "workflow %d", id)
	}

	// Go runs it; PHP reads its history, rewinds it and forks it.
	goID, err := builder.Workflow("hist").Then(`QueuetyGoInterop\Increment`).Then(`QueuetyGoInterop\Increment`).
		Then(`QueuetyGoInterop\Finish`).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	runGo()
	gid := strconv.FormatInt(goID, 10)
	phpState := php.eval(`echo json_encode(\Queuety\Queuety::workflow_state_at(` + gid + `, 1));`)
	goState, err := c.StateAt(ctx, goID, 1)
	require.NoError(t, err)
	assert.JSONEq(t, strings.TrimSpace(phpState), jsonOf(goState), "state after step 1, PHP's (expected) and Go's (actual)")
	php.eval(`\Queuety\Queuety::rewind_workflow(` + gid + `, 0);`)
	forkOut := php.eval(`echo \Queuety\Queuety::fork_workflow(` + gid + `);`)
	phpFork, err := strconv.ParseInt(strings.TrimSpace(forkOut), 10, 64)
	require.NoError(t, err, "PHP printed %q", forkOut)
	runGo()
	done(goID)
	done(phpFork)
	assert.Equal(t, int64(2), state(goID)["counter"], "rewound to after step 0 and run again by Go")
	assert.Equal(t, int64(2), state(phpFork)["counter"], "PHP's fork, run by Go")

	// PHP runs it; Go rewinds it and forks it; PHP runs them on.
	out := php.eval(`echo \Queuety\Queuety::workflow('hist')->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Increment')
		->then('QueuetyGoInterop\Finish')->dispatch([]);`)
	phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PHP printed %q", out)
	php.run("work")
	require.NoError(t, c.RewindWorkflow(ctx, phpID, 0))
	goFork, err := c.ForkWorkflow(ctx, phpID)
	require.NoError(t, err)
	php.run("work")
	done(phpID)
	done(goFork)
	assert.Equal(t, int64(2), state(phpID)["counter"], "rewound by Go, run again by PHP")
	assert.Equal(t, int64(2), state(goFork)["counter"], "Go's fork, run by PHP")
}
