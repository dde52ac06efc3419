package sqlite_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestClaimBuriesRowGoCannotRead: a pending row holding a value the store
// cannot read (a created_at that is not a time, written by hand) fails
// the claim of every batch it is in. The engine narrows the failing claim
// down to that row, buries it with an error that says so, and the worker
// runs the other jobs of its queues instead of retrying the same failing
// claim forever.
func TestClaimBuriesRowGoCannotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := queuety.Open(ctx, harness.DSN(t), queuety.WithLogger(quiet))
	require.NoError(t, err)
	defer c.Close()
	reqs := make([]queuety.JobRequest, 10)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "ok"}
	}
	ids, err := c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	bad, others := ids[3], append(ids[:3:3], ids[4:]...)
	_, err = c.DB().ExecContext(ctx, "UPDATE queuety_jobs SET created_at = 'the day before' WHERE id = ?", bad)
	require.NoError(t, err)

	var ran atomic.Int64
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet), worker.Concurrency(4))
	w.HandleJob("ok", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	_, err = w.RunOnce(ctx, 15*time.Second)
	require.NoError(t, err, "RunOnce")

	assert.Equal(t, int64(len(others)), ran.Load(), "jobs that ran")
	for _, id := range others {
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "job %d", id)
	}
	var status, msg string
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT status, error_message FROM queuety_jobs WHERE id = ?", bad).Scan(&status, &msg))
	assert.Equal(t, "buried", status, "the unreadable row: status")
	assert.Contains(t, msg, fmt.Sprintf("Job %d cannot be claimed: a value in its row makes every claim fail", bad), "error")
	assert.Contains(t, msg, `cannot parse time "the day before"`, "error names the value")
	logs, err := c.Logs(ctx, driver.LogFilter{JobID: bad})
	require.NoError(t, err)
	if assert.Len(t, logs, 1, "log rows of the unreadable row") {
		assert.Equal(t, driver.LogBuried, logs[0].Event, "event")
		assert.Equal(t, msg, logs[0].ErrorMessage, "the log row's error")
	}
}
