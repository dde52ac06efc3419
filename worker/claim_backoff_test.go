package worker_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestClaimBackoffIsCapped makes a worker's claims fail several times
// in a row (its jobs table is away): the wait between them doubles but stays within a
// couple of seconds, so the worker resumes soon after the database answers
// again, and it then runs what is due.
func TestClaimBackoffIsCapped(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer admin.Close()
	jobs, away := prefix+"queuety_jobs", prefix+"queuety_jobs_away"
	moved := false
	defer func() {
		if moved {
			_, _ = admin.Exec("RENAME TABLE " + away + " TO " + jobs)
		}
	}()

	waits := make(chan time.Duration, 100)
	ran := make(chan struct{}, 1)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()),
		worker.OnClaimBackoff(func(d time.Duration) { waits <- d }))
	w.HandleJob("work", func(context.Context, queuety.Payload) error { ran <- struct{}{}; return nil })
	run := runWorker(t, w)
	defer run.stop(t)

	// With the jobs table away, every claim fails.
	_, err = admin.Exec("RENAME TABLE " + jobs + " TO " + away)
	require.NoError(t, err)
	moved = true
	const failures = 6 // doubling from 100 ms, the sixth wait would be 3.2 s
	var longest time.Duration
	for i := range failures {
		select {
		case d := <-waits:
			longest = max(longest, d)
			if d > 2*time.Second {
				t.Fatalf("wait %d after a failed claim is %v", i+1, d)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d failed claims", i)
		}
	}
	assert.Equal(t, 2*time.Second, longest, "the longest wait")
	_, err = admin.Exec("RENAME TABLE " + away + " TO " + jobs)
	require.NoError(t, err)
	moved = false
	_, err = c.Dispatch(ctx, "work", nil)
	require.NoError(t, err)
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not resume")
	}
}
