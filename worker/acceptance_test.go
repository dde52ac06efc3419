package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestEightWorkersTwentyThousandJobs runs 8 workers, each with its own
// client (its own connection pool), over 20,000 jobs on MySQL and checks
// that every job ran exactly once, none is lost and none is buried.
func TestEightWorkersTwentyThousandJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("long-running: 20,000 jobs")
	}
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	const total, workers = 20000, 8
	setup, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer setup.Close()
	reqs := make([]queuety.JobRequest, total)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "count", Payload: queuety.State{"i": i}}
	}
	_, err = setup.DispatchMany(ctx, reqs)
	require.NoError(t, err)

	runs := make([]atomic.Int32, total)
	var done atomic.Int64
	allDone := make(chan struct{})
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var all []*worker.Worker
	for range workers {
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
		require.NoError(t, err)
		defer c.Close()
		w := worker.New(c, worker.Concurrency(4), worker.NoMaintenance(), worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()))
		all = append(all, w)
		w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
			i, ok := p.Int("i")
			if !assert.True(t, ok, "payload %v has no integer i", p) ||
				!assert.GreaterOrEqual(t, i, int64(0), "bad payload %v", p) ||
				!assert.Less(t, i, int64(total), "bad payload %v", p) {
				return nil
			}
			runs[i].Add(1)
			if done.Add(1) == total {
				close(allDone)
			}
			return nil
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, w.Run(runCtx), "worker")
		}()
	}
	select {
	case <-allDone:
	case <-runCtx.Done():
		assert.Failf(t, "not every job ran before the timeout", "only %d of %d jobs ran", done.Load(), total)
	}
	// Let the workers record the last completions, then stop them.
	requireAllCompleted(t, setup, total, time.Minute, 10*time.Millisecond)
	cancel()
	wg.Wait()
	for i := range runs {
		require.Equal(t, int32(1), runs[i].Load(), "runs of job %d", i)
	}
	// The workers' own counts agree: every job claimed and recorded once.
	var claimed, succeeded, other int64
	for _, w := range all {
		st := w.Stats()
		claimed += st.Claimed
		succeeded += st.Succeeded
		other += st.Failed + st.Stale + st.HandedBack
	}
	assert.Equal(t, int64(total), claimed, "jobs the workers claimed")
	assert.Equal(t, int64(total), succeeded, "successes the workers recorded")
	assert.Zero(t, other, "other outcomes the workers recorded (failed, stale, handed back)")
}

// TestKilledWorkerJobIsRecovered starts a real worker process, kills it
// with SIGKILL while it runs a job, and checks that stale recovery returns
// the job and a new worker completes it.
func TestKilledWorkerJobIsRecovered(t *testing.T) {
	for _, store := range []string{"mysql", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			var dsn string
			if store == "mysql" {
				dsn, _ = migrated.DSN(t)
			} else {
				dsn = "sqlite://" + filepath.Join(t.TempDir(), "q.db")
			}
			ctx := context.Background()
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
			require.NoError(t, err)
			defer c.Close()
			id, err := c.Dispatch(ctx, "slow", queuety.State{"report": 7}, queuety.WithBackoff(queuety.BackoffSeconds(0)))
			require.NoError(t, err)

			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), childEnv+"="+dsn)
			var stderr strings.Builder
			child.Stderr = &stderr
			require.NoError(t, child.Start())
			require.Eventually(t, func() bool {
				j, err := c.Job(ctx, id)
				return err == nil && j.Status == queuetytype.JobProcessing
			}, 30*time.Second, 10*time.Millisecond, "the child worker did not start the job")
			// The registry shows the child and, from its next renewal, its job.
			require.Eventually(t, func() bool {
				ws, err := c.Workers(ctx)
				return err == nil && len(ws) == 1 && ws[0].PID == child.Process.Pid && slices.Equal(ws[0].Jobs, []int64{id})
			}, 30*time.Second, 10*time.Millisecond, "the registry does not show the child worker running its job")
			require.NoError(t, child.Process.Signal(syscall.SIGKILL))
			state, err := child.Process.Wait()
			require.NoError(t, err, "wait for the child")
			ws, ok := state.Sys().(syscall.WaitStatus)
			require.True(t, ok, "child exit status %v is not a syscall.WaitStatus", state)
			require.Equal(t, syscall.SIGKILL, ws.Signal(), "child did not die of SIGKILL: %v (stderr: %s)", state, stderr.String())
			j, err := c.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, queuetytype.JobProcessing, j.Status, "status after the kill")
			require.Equal(t, 1, j.Attempts, "attempts after the kill")

			// Later (as seen by a fake clock past the stale timeout), another
			// process recovers the job and runs it.
			clock := queuety.NewFakeClock(time.Now().Add(queuetytype.DefaultStaleTimeout + time.Minute))
			c2, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
			require.NoError(t, err)
			defer c2.Close()
			var ran atomic.Int64
			w := worker.New(c2, worker.NoMaintenance(), worker.WithLogger(quiet()))
			w.HandleJob("slow", func(_ context.Context, p queuety.Payload) error {
				v, _ := p.Int("report")
				assert.Equal(t, int64(7), v, "payload %v", p)
				ran.Add(1)
				return nil
			})
			gone, err := c2.Workers(ctx)
			require.NoError(t, err)
			require.Len(t, gone, 1, "the killed worker stays in the registry")
			assert.Equal(t, child.Process.Pid, gone[0].PID)
			assert.True(t, gone[0].Gone, "the killed worker shows as gone")
			assert.Equal(t, []int64{id}, gone[0].Jobs, "the job it held")
			st, err := w.RunOnce(ctx, time.Minute)
			require.NoError(t, err)
			require.Equal(t, 1, st.Swept.JobsRecovered, "jobs recovered")
			// A worker running after the registry's retention removes it.
			c3, err := queuety.Open(ctx, dsn, queuety.WithClock(queuety.NewFakeClock(time.Now().Add(queuetytype.WorkerRetention+time.Minute))),
				queuety.WithLogger(quiet()))
			require.NoError(t, err)
			defer c3.Close()
			_, err = worker.New(c3, worker.NoMaintenance(), worker.WithLogger(quiet())).RunOnce(ctx, time.Second)
			require.NoError(t, err)
			gone, err = c3.Workers(ctx)
			require.NoError(t, err)
			assert.Empty(t, gone, "the registry after the retention")
			require.Equal(t, int64(1), ran.Load(), "runs")
			j, err = c2.Job(ctx, id)
			require.NoError(t, err)
			require.Equal(t, queuetytype.JobCompleted, j.Status, "final status")
			require.Equal(t, 2, j.Attempts, "final attempts")
			logs, err := c2.Logs(ctx, driver.LogFilter{JobID: id})
			require.NoError(t, err)
			var events []string
			for _, l := range logs {
				events = append(events, string(l.Event))
			}
			require.Equal(t, "retried,started,completed", strings.Join(events, ","), "logs")
		})
	}
}

// requireAllCompleted polls c every tick, for up to d, until its jobs are
// total completed jobs and nothing else.
func requireAllCompleted(t *testing.T, c *queuety.Client, total int, d, tick time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		counts, err := c.Counts(context.Background())
		if !assert.NoError(ct, err) || !assert.Len(ct, counts, 1, "job counts %+v", counts) {
			return
		}
		assert.Equal(ct, queuetytype.JobCompleted, counts[0].Status, "job counts %+v", counts)
		assert.Equal(ct, int64(total), counts[0].Count, "job counts %+v", counts)
	}, d, tick, "the jobs did not all complete")
}
