package worker_test

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// runHolding starts a worker whose "hold" handler signals started and
// blocks until the test ends; it returns the worker's log.
func runHolding(t *testing.T, c *queuety.Client, lease time.Duration, started chan<- int64) *syncbuf.Buffer {
	t.Helper()
	logs := &syncbuf.Buffer{}
	proceed := make(chan struct{})
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(lease),
		worker.Concurrency(4), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.HandleJob("hold", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		started <- info.JobID
		select {
		case <-proceed:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	run := runWorker(t, w)
	t.Cleanup(func() { close(proceed); run.stop(t) })
	return logs
}

// waitStarted waits for n jobs to start.
func waitStarted(t *testing.T, started <-chan int64, n int) {
	t.Helper()
	for range n {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("a job did not start")
		}
	}
}

// TestRenewalSkipsHeldRows: while another transaction holds one running
// job's row, the worker still renews its other claims (one busy row does
// not hold up every renewal until the claims go stale), keeps running the
// held job, and renews it once the row is free.
func TestRenewalSkipsHeldRows(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	clock := queuety.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() }) // after the worker stops
	held, err := c.Dispatch(ctx, "hold", nil)
	require.NoError(t, err)
	free, err := c.Dispatch(ctx, "hold", nil)
	require.NoError(t, err)
	started := make(chan int64, 4)
	logs := runHolding(t, c, 10*time.Millisecond, started)
	waitStarted(t, started, 2)

	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	holder, err := admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer holder.Rollback()
	var id int64
	require.NoError(t, holder.QueryRowContext(ctx, "SELECT id FROM "+prefix+"queuety_jobs WHERE id = ? FOR UPDATE", held).Scan(&id))

	reservedAt := func(id int64) time.Time {
		var at time.Time
		require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT reserved_at FROM "+prefix+"queuety_jobs WHERE id = ?", id).Scan(&at))
		return at
	}
	clock.Advance(time.Minute)
	want := clock.Now().UTC().Truncate(time.Second)
	require.Eventually(t, func() bool { return !reservedAt(free).Before(want) }, 30*time.Second, 5*time.Millisecond,
		"the claim of the job whose row is free is renewed while the other row is held")
	assert.True(t, reservedAt(held).Before(want), "the held row is not written")
	require.NoError(t, holder.Rollback())
	require.Eventually(t, func() bool { return !reservedAt(held).Before(want) }, 30*time.Second, 5*time.Millisecond,
		"the held job's claim is renewed once its row is free")
	var status string
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT status FROM "+prefix+"queuety_jobs WHERE id = ?", held).Scan(&status))
	assert.Equal(t, "processing", status, "the held job still runs")
	assert.NotContains(t, logs.String(), "taken away", "no handler was cancelled")
}

// TestSlowRenewalIsLogged: when renewing claims takes longer than the
// lease interval (here the jobs table is locked for a while), the worker
// says so: such claims are close to being recovered as stale while their
// handlers still run.
func TestSlowRenewalIsLogged(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() }) // after the worker stops
	_, err = c.Dispatch(ctx, "hold", nil)
	require.NoError(t, err)
	const lease = 20 * time.Millisecond
	started := make(chan int64, 1)
	logs := runHolding(t, c, lease, started)
	waitStarted(t, started, 1)

	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "LOCK TABLES "+prefix+"queuety_jobs WRITE")
	require.NoError(t, err)
	// Unlock once a renewal has waited for several lease intervals.
	require.Eventually(t, func() bool {
		var waiting int
		err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' "+
			"AND INFO LIKE ? AND TIME_MS > ?", "SELECT %"+prefix+"queuety_jobs% SKIP LOCKED", (5 * lease).Milliseconds()).Scan(&waiting)
		return err == nil && waiting > 0
	}, 30*time.Second, 5*time.Millisecond, "a renewal waits for the table")
	_, err = conn.ExecContext(ctx, "UNLOCK TABLES")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "renewing job claims took longer than the lease interval")
	}, 30*time.Second, 5*time.Millisecond, "the slow renewal is logged")
}
