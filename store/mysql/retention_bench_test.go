package mysql_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/retention"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// BenchmarkRetentionUnderLoad measures the retention cleaner deleting
// 200,000 completed jobs and their 200,000 log rows, all 10 days old,
// while a worker drains 20,000 new jobs, in one run: the drain rate
// without the cleaner first, then with the cleaner running at the
// worker's defaults (1,000 rows a transaction, 20 ms between them).
//
//	go test -run '^$' -bench BenchmarkRetentionUnderLoad -benchtime 1x ./store/mysql/
func BenchmarkRetentionUnderLoad(b *testing.B) {
	const old, fresh = 200000, 20000
	for range b.N {
		ctx := context.Background()
		dsn, prefix := migrated.DSN(b)
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(b, err)
		db := testdb.Admin(b)
		now := time.Now().UTC()
		then := sqlTime(now.Add(-10 * 24 * time.Hour))
		jobs, logs := prefix+"queuety_jobs", prefix+"queuety_logs"
		insertRows(b, db, jobs, "queue, handler, payload, status, attempts, max_attempts, available_at, created_at, completed_at", old, func(int) string {
			return fmt.Sprintf("('default','noop','[]','completed',1,3,'%s','%s','%s')", then, then, then)
		})
		insertRows(b, db, logs, "job_id, handler, queue, event, attempt, duration_ms, created_at", old, func(i int) string {
			return fmt.Sprintf("(%d,'noop','default','completed',1,1,'%s')", i+1, then)
		})
		pending := func() {
			t := sqlTime(time.Now().UTC())
			insertRows(b, db, jobs, "queue, handler, payload, status, attempts, max_attempts, available_at, created_at", fresh, func(int) string {
				return fmt.Sprintf("('default','noop','[]','pending',0,3,'%s','%s')", t, t)
			})
		}
		// drain runs a worker until it has finished fresh jobs; during,
		// if set, runs beside it, and the rate counts only the jobs
		// finished while it ran.
		drain := func(during func() time.Duration) (rate, cleanRate float64, cleanRows int64) {
			var done atomic.Int64
			all := make(chan struct{})
			w := worker.New(c, worker.NoMaintenance(), worker.Concurrency(16), worker.WithLogger(quiet()),
				worker.WithHooks(worker.Hooks{Finished: func(*queuetytype.Job, error) {
					if done.Add(1) == fresh {
						close(all)
					}
				}}))
			w.HandleJob("noop", func(context.Context, queuety.Payload) error { return nil })
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			t0 := time.Now()
			go func() { ran <- w.Run(runCtx) }()
			if during != nil {
				d := during()
				n := done.Load()
				rate = float64(n) / d.Seconds()
			}
			<-all
			if during == nil {
				rate = float64(fresh) / time.Since(t0).Seconds()
			}
			stop()
			require.NoError(b, <-ran)
			return rate, cleanRate, cleanRows
		}
		pending()
		base, _, _ := drain(nil)

		pending()
		var rep retention.Report
		var cleanFor time.Duration
		cl := retention.New(clientseam.Engine(c), retention.Policy{Completed: 7 * 24 * time.Hour, Logs: 7 * 24 * time.Hour,
			BatchSize: worker.RetentionBatchDefault, Pause: worker.RetentionPauseDefault, Budget: time.Hour})
		with, _, _ := drain(func() time.Duration {
			t0 := time.Now()
			rep, err = cl.Pass(ctx)
			require.NoError(b, err)
			cleanFor = time.Since(t0)
			return cleanFor
		})
		require.Equal(b, int64(old), rep.Deleted[retention.KindCompleted], "completed jobs deleted")
		require.Equal(b, int64(old), rep.Deleted[retention.KindLogs], "log rows deleted")
		b.ReportMetric(base, "drain-jobs/s-alone")
		b.ReportMetric(with, "drain-jobs/s-with-cleaner")
		b.ReportMetric(float64(rep.Total())/cleanFor.Seconds(), "pruned-rows/s")
		b.ReportMetric(cleanFor.Seconds(), "clean-s")
		c.Close()
	}
}
