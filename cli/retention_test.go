package cli_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestWorkflowRetentionCommands: workflow prune-events deletes old events
// and keeps the workflows; workflow purge deletes old finished workflows
// and keeps recent ones.
func TestWorkflowRetentionCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := tempDSN(t)
	runAt := func(at time.Time) int64 {
		c, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(at)), queuety.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		defer c.Close()
		id, err := builder.Workflow("wf").Then("a").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		// Without the cleaner: the run an hour ago must not delete the
		// workflow of 40 days ago the commands are tested on.
		w := worker.New(c, worker.NoRetention())
		w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"ok": true}, nil })
		_, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		return id
	}
	old, recent := runAt(time.Now().Add(-40*24*time.Hour)), runAt(time.Now().Add(-time.Hour))
	c := openClient(t, dsn)

	out := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "prune-events", "--older-than", "30", "--json"))
	assert.Equal(t, int64(2), num(out["deleted"]), "the old workflow's two events: %v", out)
	wf, err := c.Workflow(ctx, old)
	require.NoError(t, err, "prune-events keeps the workflow")
	assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status)

	text := mustRun(t, nil, "--dsn", dsn, "workflow", "purge", "--older-than", "30")
	assert.Contains(t, text, "Deleted 1 workflow that finished before")
	_, err = c.Workflow(ctx, old)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "purged")
	_, err = c.Workflow(ctx, recent)
	require.NoError(t, err, "a recent workflow stays")
	wantFail(t, 2, "--older-than is required", "--dsn", dsn, "workflow", "purge")
	wantFail(t, 2, "--older-than must not be negative", "--dsn", dsn, "workflow", "prune-events", "--older-than", "-1h")
}
