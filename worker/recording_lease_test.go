package worker_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// TestSlowRecordingKeepsTheClaim covers a success whose recording fails
// and is retried for longer than the stale timeout (here the logs table
// is away for a while): the worker keeps renewing the claim while the
// result waits, so stale recovery leaves the job alone and it runs once.
func TestSlowRecordingKeepsTheClaim(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	clock := queuety.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	const stale = time.Minute
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithStaleTimeout(stale), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	id, err := c.Dispatch(ctx, "once", nil)
	require.NoError(t, err)

	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	logs, away := prefix+"queuety_logs", prefix+"queuety_logs_away"
	moved := false
	defer func() {
		if moved {
			_, _ = admin.Exec("RENAME TABLE " + away + " TO " + logs)
		}
	}()

	runs := make(chan int, 4)
	proceed := make(chan struct{})
	finished := make(chan error, 4)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.LeaseInterval(10*time.Millisecond),
		worker.WithLogger(quiet()), worker.WithHooks(worker.Hooks{Finished: func(_ *driver.Job, err error) { finished <- err }}))
	w.HandleJob("once", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		runs <- info.Attempt
		<-proceed
		return nil
	})
	run := runWorker(t, w)
	defer run.stop(t)

	select {
	case a := <-runs:
		require.Equal(t, 1, a, "first attempt")
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start")
	}
	// With the logs table away, recording the success fails and is
	// retried. Move the engine clock past the stale timeout, wait for a
	// renewal at the new time, then sweep for stale claims.
	_, err = admin.Exec("RENAME TABLE " + logs + " TO " + away)
	require.NoError(t, err)
	moved = true
	close(proceed)
	clock.Advance(stale + time.Second)
	want := clock.Now().UTC().Truncate(time.Second)
	require.Eventually(t, func() bool {
		var reserved time.Time
		err := c.DB().QueryRowContext(ctx, "SELECT reserved_at FROM "+prefix+"queuety_jobs WHERE id = ?", id).Scan(&reserved)
		return err == nil && !reserved.Before(want)
	}, 30*time.Second, 5*time.Millisecond, "the claim of the waiting success is renewed")
	recovered, err := deadline.New(c).Stale(ctx)
	require.NoError(t, err)
	assert.Zero(t, recovered, "stale claims recovered while the success waited to be recorded")

	_, err = admin.Exec("RENAME TABLE " + away + " TO " + logs)
	require.NoError(t, err)
	moved = false
	select {
	case err := <-finished:
		require.NoError(t, err, "the success is recorded")
	case <-time.After(60 * time.Second):
		t.Fatal("the success was not recorded")
	}
	var status string
	var attempts int
	require.NoError(t, c.DB().QueryRowContext(ctx, "SELECT status, attempts FROM "+prefix+"queuety_jobs WHERE id = ?", id).Scan(&status, &attempts))
	assert.Equal(t, "completed", status)
	assert.Equal(t, 1, attempts, "attempts")
	select {
	case a := <-runs:
		t.Fatalf("the job ran again (attempt %d)", a)
	default:
	}
}
