package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestClaimBuriesRowTheServerRefuses: when the server refuses to claim
// one row of a batch (here a trigger raises the out-of-range error a
// value past its column gives), the engine narrows the failing claim down
// to that row, buries it with an error that says so, and the worker runs
// the other jobs of its queues instead of retrying the same failing claim
// forever.
func TestClaimBuriesRowTheServerRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	bad, err := c.Dispatch(ctx, "ok", nil, queuety.OnQueue("first"))
	require.NoError(t, err)
	reqs := make([]queuety.JobRequest, 10)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "ok"}
	}
	others, err := c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	_, err = c.DB().ExecContext(ctx, fmt.Sprintf("CREATE TRIGGER %[1]srefuse_claim BEFORE UPDATE ON %[1]squeuety_jobs FOR EACH ROW "+
		"BEGIN IF NEW.id = %[2]d AND NEW.status = 'processing' THEN "+
		"SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'Out of range value for column ''attempts''', MYSQL_ERRNO = 1264; END IF; END", prefix, bad))
	require.NoError(t, err, "create trigger")

	var ran atomic.Int64
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.Queues("first", queuetytype.DefaultQueue), worker.Concurrency(4))
	w.HandleJob("ok", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	_, err = w.RunOnce(ctx, 15*time.Second)
	require.NoError(t, err, "RunOnce")

	assert.Equal(t, int64(len(others)), ran.Load(), "jobs that ran")
	for _, id := range others {
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "job %d", id)
	}
	j, err := c.Job(ctx, bad)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "the refused row: status")
	assert.Equal(t, 0, j.Attempts, "the refused row: attempts")
	assert.Contains(t, j.ErrorMessage, fmt.Sprintf("Job %d cannot be claimed: a value in its row makes every claim fail", bad), "error")
	assert.Contains(t, j.ErrorMessage, "Out of range value for column 'attempts'", "error names the server's refusal")
	logs, err := c.Logs(ctx, driver.LogFilter{JobID: bad})
	require.NoError(t, err)
	if assert.Len(t, logs, 1, "log rows of the refused row") {
		assert.Equal(t, driver.LogBuried, logs[0].Event, "event")
		assert.Equal(t, "ok", logs[0].Handler, "handler")
		assert.Equal(t, j.ErrorMessage, logs[0].ErrorMessage, "the log row's error")
	}
	failures, err := c.Failures(ctx, 0, bad)
	require.NoError(t, err)
	if assert.Len(t, failures, 1, "failure rows") {
		assert.Equal(t, driver.FailureInternal, failures[0].Category, "category")
	}
}

// TestClaimDoesNotBuryRowsForAnErrorOfEveryRow: when the server refuses
// every row the same way, the cause is not in a row: nothing is buried,
// and the claim reports the error.
func TestClaimDoesNotBuryRowsForAnErrorOfEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	ids, err := c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "ok"}, {Handler: "ok"}, {Handler: "ok"}})
	require.NoError(t, err)
	_, err = c.DB().ExecContext(ctx, fmt.Sprintf("CREATE TRIGGER %[1]srefuse_all BEFORE UPDATE ON %[1]squeuety_jobs FOR EACH ROW "+
		"BEGIN IF NEW.status = 'processing' THEN SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'refused', MYSQL_ERRNO = 1264; END IF; END", prefix))
	require.NoError(t, err, "create trigger")
	_, err = clientseam.Engine(c).Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"ok"}, Limit: 10})
	require.Error(t, err, "claim")
	assert.True(t, errors.Is(err, driver.ErrRowData), "the claim's error is a row data error: %v", err)
	for _, id := range ids {
		j, err := c.Job(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobPending, j.Status, "job %d", id)
	}
}
