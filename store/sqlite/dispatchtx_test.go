package sqlite_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// TestDispatchTxOnApplicationDB enqueues in a transaction of the
// application's own handle on the store's file (the same driver, its own
// connection): the job exists only after the commit, and a rollback
// leaves nothing.
func TestDispatchTxOnApplicationDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := harness.DSN(t)
	epoch := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(epoch)),
		queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	path := strings.TrimPrefix(dsn, "sqlite://")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = c.DispatchTx(ctx, tx, "app_job", queuety.State{"n": 1})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback())
	jobs, err := c.ListJobs(ctx, driver.JobFilter{})
	require.NoError(t, err)
	assert.Empty(t, jobs, "jobs after rollback")

	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	id, err := c.DispatchTx(ctx, tx, "app_job", queuety.State{"n": 2}, queuety.Delay(90*time.Second))
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, `{"n":2}`, string(j.Payload), "payload")
	assert.Equal(t, epoch.Add(90*time.Second), j.AvailableAt, "available_at")
	assert.Equal(t, queuetytype.JobPending, j.Status, "status")
}
