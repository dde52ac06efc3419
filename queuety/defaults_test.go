package queuety_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/mysql"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// TestHandlerDefaults: a client opened WithRegistry writes the handler's
// defaults (queue, attempts, priority) into the rows of jobs whose
// dispatch does not set them, and the dispatch's own options win; other
// handlers and clients without the registry are untouched.
func TestHandlerDefaults(t *testing.T) {
	mysqlDSN, _ := testdb.DSN(t)
	for name, dsn := range map[string]string{"mysql": mysqlDSN, "sqlite": "sqlite://" + filepath.Join(t.TempDir(), "q.db")} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			reg := queuety.NewRegistry()
			reg.HandleJob("send_email", func(context.Context, queuety.Payload) error { return nil })
			reg.Defaults("send_email", queuety.OnQueue("emails"), queuety.MaxAttempts(5), queuety.WithPriority(queuetytype.PriorityHigh))
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet), queuety.WithRegistry(reg))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			assert.Same(t, reg, c.Registry())

			job := func(id int64) *queuetytype.Job {
				t.Helper()
				j, err := c.Job(ctx, id)
				require.NoError(t, err)
				return j
			}
			plain, err := c.Dispatch(ctx, "send_email", nil)
			require.NoError(t, err)
			j := job(plain)
			assert.Equal(t, "emails", j.Queue)
			assert.Equal(t, 5, j.MaxAttempts)
			assert.Equal(t, queuetytype.PriorityHigh, j.Priority)

			own, err := c.Dispatch(ctx, "send_email", nil, queuety.OnQueue("urgent"), queuety.MaxAttempts(2))
			require.NoError(t, err)
			j = job(own)
			assert.Equal(t, "urgent", j.Queue, "the dispatch's queue wins")
			assert.Equal(t, 2, j.MaxAttempts, "the dispatch's attempts win")
			assert.Equal(t, queuetytype.PriorityHigh, j.Priority, "the default it did not override")

			ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "send_email"}, {Handler: "other"}})
			require.NoError(t, err)
			assert.Equal(t, "emails", job(ids[0]).Queue, "DispatchMany")
			assert.Equal(t, queuetytype.DefaultQueue, job(ids[1]).Queue, "a handler without defaults")

			batch, err := c.NewBatch(queuety.JobRequest{Handler: "send_email"}).Dispatch(ctx)
			require.NoError(t, err)
			jobs, err := c.ListJobs(ctx, queuetytype.JobFilter{Handler: "send_email"})
			require.NoError(t, err)
			var inBatch *queuetytype.Job
			for _, j := range jobs {
				if j.BatchID == batch {
					inBatch = j
				}
			}
			require.NotNil(t, inBatch)
			assert.Equal(t, 5, inBatch.MaxAttempts, "batch job")

			bare, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet), queuety.SkipMigrate())
			require.NoError(t, err)
			t.Cleanup(func() { bare.Close() })
			id, err := bare.Dispatch(ctx, "send_email", nil)
			require.NoError(t, err)
			assert.Equal(t, queuetytype.DefaultQueue, job(id).Queue, "a client without the registry")
		})
	}
}
