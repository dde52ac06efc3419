package builder_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// openClient opens a fresh in-memory SQLite store for one test.
func openClient(t *testing.T, opts ...queuety.Option) *queuety.Client {
	t.Helper()
	opts = append([]queuety.Option{queuety.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	c, err := queuety.Open(context.Background(), "sqlite://:memory:", opts...)
	require.NoError(t, err, "open sqlite")
	t.Cleanup(func() { c.Close() })
	return c
}

// assertNothingWritten fails when any workflow, job or log row exists.
func assertNothingWritten(t *testing.T, c *queuety.Client) {
	t.Helper()
	ctx := context.Background()
	wfs, err := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	require.NoError(t, err, "list workflows")
	jobs, err := c.ListJobs(ctx, driver.JobFilter{})
	require.NoError(t, err, "list jobs")
	logs, err := c.Logs(ctx, driver.LogFilter{})
	require.NoError(t, err, "list logs")
	assert.Empty(t, wfs, "workflow rows written")
	assert.Empty(t, jobs, "job rows written")
	assert.Empty(t, logs, "log rows written")
}
