package builder_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// openClient opens a fresh in-memory SQLite store for one test.
func openClient(t *testing.T, opts ...queuety.Option) *queuety.Client {
	t.Helper()
	opts = append([]queuety.Option{queuety.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	c, err := queuety.Open(context.Background(), "sqlite://:memory:", opts...)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// assertNothingWritten fails when any workflow, job or log row exists.
func assertNothingWritten(t *testing.T, c *queuety.Client) {
	t.Helper()
	ctx := context.Background()
	wfs, err := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	if err != nil {
		t.Fatalf("list workflows: %v", err)
	}
	jobs, err := c.ListJobs(ctx, driver.JobFilter{})
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	logs, err := c.Logs(ctx, driver.LogFilter{})
	if err != nil {
		t.Fatalf("list logs: %v", err)
	}
	if len(wfs) != 0 || len(jobs) != 0 || len(logs) != 0 {
		t.Errorf("rows written: %d workflows, %d jobs, %d logs; want none", len(wfs), len(jobs), len(logs))
	}
}
