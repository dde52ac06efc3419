package mysql_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestDispatchTxOnApplicationDB enqueues in a transaction of the
// application's own *sql.DB, whose driver location and session time zone
// are not UTC: the rows hold the same UTC times as the store's own
// dispatches, and they exist only after the commit.
func TestDispatchTxOnApplicationDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	epoch := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := queuety.NewFakeClock(epoch)
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	app := cfg.Driver.Clone()
	app.ParseTime = true
	app.Loc = time.FixedZone("UTC+5", 5*3600)
	app.Params = map[string]string{"time_zone": "'+05:00'"}
	conn, err := gomysql.NewConnector(app)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	id, err := c.DispatchTx(ctx, tx, "app_job", queuety.State{"order": 1}, queuety.Delay(90*time.Second))
	require.NoError(t, err)
	wf, err := builder.Workflow("app_flow").Then("s").MustCompleteWithin(0, 1, 0, 0).DispatchTx(ctx, c, tx, nil)
	require.NoError(t, err)
	_, err = c.Job(ctx, id)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "job before the commit, from another connection")
	require.NoError(t, tx.Commit())

	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, epoch, j.CreatedAt, "created_at in UTC")
	assert.Equal(t, epoch.Add(90*time.Second), j.AvailableAt, "available_at in UTC")
	w, err := c.Workflow(ctx, wf)
	require.NoError(t, err)
	assert.Equal(t, epoch, w.StartedAt, "started_at in UTC")
	assert.Equal(t, epoch.Add(time.Hour), w.DeadlineAt, "deadline_at in UTC")
	steps, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: wf})
	require.NoError(t, err)
	require.Len(t, steps, 1, "first step")
	assert.Equal(t, epoch, steps[0].AvailableAt, "first step due in UTC")

	// The raw column text, read on a UTC session.
	var raw string
	admin := testdb.Admin(t)
	require.NoError(t, admin.QueryRowContext(ctx, "SELECT CAST(available_at AS CHAR) FROM "+cfg.Prefix+"queuety_jobs WHERE id = ?", id).Scan(&raw))
	assert.Equal(t, "2030-01-02 03:05:35", raw, "stored text")
}
