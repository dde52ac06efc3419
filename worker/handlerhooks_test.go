package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// bothStores runs f on MariaDB and on a SQLite file.
func bothStores(t *testing.T, f func(t *testing.T, dsn string)) {
	mysqlDSN, _ := testdb.DSN(t)
	for name, dsn := range map[string]string{"mysql": mysqlDSN, "sqlite": "sqlite://" + filepath.Join(t.TempDir(), "q.db")} {
		t.Run(name, func(t *testing.T) { f(t, dsn) })
	}
}

// TestOnBuriedHookOnceAfterBury: the hook of a handler runs once, when its
// job is buried (not on the retried attempt), after the bury committed; a
// panicking hook leaves the worker running the next jobs.
func TestOnBuriedHookOnceAfterBury(t *testing.T) {
	bothStores(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		reg := queuety.NewRegistry()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithRegistry(reg))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })

		type call struct {
			id     int64
			status queuetytype.JobStatus
			err    error
		}
		var mu sync.Mutex
		var calls []call
		reg.HandleJob("charge", func(context.Context, queuety.Payload) error { return errors.New("card declined") })
		reg.OnBuried("charge", func(ctx context.Context, job *queuetytype.Job, err error) {
			j, rerr := c.Job(ctx, job.ID) // the bury is committed: another connection sees it
			require.NoError(t, rerr)
			mu.Lock()
			calls = append(calls, call{job.ID, j.Status, err})
			mu.Unlock()
		})
		var after int
		reg.HandleJob("explode", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("bad input")) })
		reg.OnBuried("explode", func(context.Context, *queuetytype.Job, error) { panic("hook bug") })
		reg.HandleJob("after", func(context.Context, queuety.Payload) error { after++; return nil })

		w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(1), worker.WithLogger(quiet())) // the client's registry
		charge, err := c.Dispatch(ctx, "charge", nil, queuety.Retry(2, queuety.BackoffSeconds(0)))
		require.NoError(t, err)
		_, err = c.Dispatch(ctx, "explode", nil)
		require.NoError(t, err)
		_, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		_, err = c.Dispatch(ctx, "after", nil)
		require.NoError(t, err)
		_, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)

		require.Len(t, calls, 1, "hook calls: one, for the buried attempt only")
		assert.Equal(t, charge, calls[0].id)
		assert.Equal(t, queuetytype.JobBuried, calls[0].status, "status the hook reads")
		assert.EqualError(t, calls[0].err, "card declined")
		assert.Equal(t, 1, after, "the worker runs jobs after a hook panicked")
		j, err := c.Job(ctx, charge)
		require.NoError(t, err)
		assert.Equal(t, 2, j.Attempts)
	})
}

// TestMaxExecutionTime: a handler past the worker's execution-time limit
// fails its attempt with Queuety's TimeoutException message (here its
// last, so the job is buried with it); one within it completes.
func TestMaxExecutionTime(t *testing.T) {
	bothStores(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()), worker.MaxExecutionTime(200*time.Millisecond))
		var cause error
		w.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		w.HandleJob("quick", func(context.Context, queuety.Payload) error { return nil })
		slow, err := c.Dispatch(ctx, "slow", nil, queuety.MaxAttempts(1))
		require.NoError(t, err)
		quick, err := c.Dispatch(ctx, "quick", nil)
		require.NoError(t, err)
		_, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)

		var te *middleware.TimeoutError
		require.ErrorAs(t, cause, &te, "the handler's ctx cause")
		j, err := c.Job(ctx, slow)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobBuried, j.Status)
		assert.Equal(t, "Job exceeded maximum execution time of 200ms.", j.ErrorMessage)
		j, err = c.Job(ctx, quick)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.JobCompleted, j.Status)
	})
}
