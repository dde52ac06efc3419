package mysql_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/bench"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// BenchmarkThroughput runs the bench scenarios once per iteration on fresh
// tables and reports their rates (jobs/s or steps/s). The same numbers,
// as medians of several runs, come from `queuety-worker bench`.
func BenchmarkThroughput(b *testing.B) {
	env, err := bench.EnvFor(testdb.BaseDSN(b))
	require.NoError(b, err)
	for _, s := range []struct{ scenario, unit string }{
		{"dispatch", "jobs/s"}, {"drain-1w", "jobs/s"}, {"drain-4w", "jobs/s"},
		{"workflow-3step-4w", "steps/s"}, {"raw-sql-ceiling-4c", "jobs/s"},
	} {
		b.Run(s.scenario, func(b *testing.B) {
			total := 0.0
			for range b.N {
				rep, err := bench.Run(context.Background(), env, bench.Config{Jobs: 10000, Workflows: 500, Runs: 1,
					Concurrency: 100, Scenarios: []string{s.scenario}})
				require.NoError(b, err)
				// bench.Run fails a drain or workflow run that does not
				// finish its work; a result without a positive rate means
				// the scenario did not run.
				require.Len(b, rep.Results, 1, "results")
				require.Equal(b, s.scenario, rep.Results[0].Name, "scenario reported")
				require.Len(b, rep.Results[0].Runs, 1, "runs of %s", s.scenario)
				require.Greater(b, rep.Results[0].Median, 0.0, "median rate of %s", s.scenario)
				total += rep.Results[0].Median
			}
			b.ReportMetric(total/float64(b.N), s.unit)
		})
	}
}

// BenchmarkWatchdogSweep measures one pass of the activity-timeout
// watchdog and of the workflow-deadline sweep on tables of 10,000 and
// 100,000 rows with 0 or 100 expired rows. The cost follows the expired
// rows, not the table: compare table=10000 with table=100000 at the same
// expired count.
func BenchmarkWatchdogSweep(b *testing.B) {
	for _, size := range []int{10000, 100000} {
		for _, expired := range []int{0, 100} {
			b.Run(fmt.Sprintf("table=%d/expired=%d", size, expired), func(b *testing.B) {
				benchWatchdog(b, size, expired)
			})
		}
	}
}

func benchWatchdog(b *testing.B, size, expired int) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(b)
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(b, err)
	defer c.Close()
	db := testdb.Admin(b)
	now := clock.Now()
	future := sqlTime(now.Add(time.Hour))
	jobs, wfs := prefix+"queuety_jobs", prefix+"queuety_workflows"
	insertRows(b, db, jobs, "queue, handler, payload, status, attempts, max_attempts, available_at, created_at, reserved_at, claim_token, start_to_close_at, heartbeat_deadline_at",
		size, func(int) string {
			return fmt.Sprintf("('default','noop','[]','processing',1,1,'%s','%s','%s',7,'%s','%s')", sqlTime(now), sqlTime(now), sqlTime(now), future, future)
		})
	insertRows(b, db, wfs, wfCols, size, func(int) string {
		return fmt.Sprintf("('bulk','running','{\"_steps\":[]}',0,1,'%s','%s','%s')", sqlTime(now), future, future)
	})
	sw := deadline.New(c)
	rearm := func() {
		if expired == 0 {
			return
		}
		past := sqlTime(now.Add(-time.Minute))
		_, err := db.Exec(fmt.Sprintf("UPDATE %s SET status = 'processing', claim_token = 7, start_to_close_at = '%s' ORDER BY id LIMIT %d", jobs, past, expired))
		require.NoError(b, err)
		_, err = db.Exec(fmt.Sprintf("UPDATE %s SET status = 'running', deadline_at = '%s' ORDER BY id LIMIT %d", wfs, past, expired))
		require.NoError(b, err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		rearm()
		b.StartTimer()
		n, err := sw.Timeouts(ctx)
		require.NoError(b, err, "watchdog")
		require.Equal(b, expired, n, "timeouts the watchdog enforced")
		n, err = sw.Deadlines(ctx)
		require.NoError(b, err, "deadline sweep")
		require.Equal(b, expired, n, "workflows the deadline sweep expired")
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkWorkerHeartbeat measures one renewal of a worker's registry
// row as a worker writes it (the upsert and the prune read of gone rows,
// in one transaction) with 100 other workers registered.
func BenchmarkWorkerHeartbeat(b *testing.B) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(b)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(b, err)
	defer c.Close()
	store := clientseam.StoreOf(c)
	now := time.Now().UTC()
	for i := range 100 {
		w := &queuetytype.Worker{ID: fmt.Sprintf("other-%d", i), Host: "h", PID: i, Queues: []string{"default"}, Concurrency: 10,
			HeartbeatInterval: 3 * time.Second, StartedAt: now, LastHeartbeat: now}
		require.NoError(b, store.InTx(ctx, func(tx driver.Tx) error { return tx.WorkerSave(ctx, w) }))
	}
	w := &queuetytype.Worker{ID: "me", Host: "h", PID: 1, Queues: []string{"default"}, Handlers: []string{"a", "b"}, Concurrency: 10,
		Jobs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, HeartbeatInterval: 3 * time.Second, StartedAt: now}
	b.ResetTimer()
	for range b.N {
		w.LastHeartbeat = time.Now().UTC()
		require.NoError(b, store.InTx(ctx, func(tx driver.Tx) error {
			if err := tx.WorkerSave(ctx, w); err != nil {
				return err
			}
			_, err := tx.WorkerPrune(ctx, w.LastHeartbeat.Add(-queuetytype.WorkerRetention), 100)
			return err
		}))
	}
}
