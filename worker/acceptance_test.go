package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
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
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	reqs := make([]queuety.JobRequest, total)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "count", Payload: queuety.State{"i": i}}
	}
	if _, err := setup.DispatchMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}

	runs := make([]atomic.Int32, total)
	var done atomic.Int64
	allDone := make(chan struct{})
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var all []*worker.Worker
	for range workers {
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w := worker.New(c, worker.Concurrency(4), worker.NoMaintenance(), worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()))
		all = append(all, w)
		w.HandleJob("count", func(_ context.Context, p queuety.Payload) error {
			i, ok := p.Int("i")
			if !ok || i < 0 || i >= total {
				t.Errorf("bad payload %v", p)
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
			if err := w.Run(runCtx); err != nil {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	select {
	case <-allDone:
	case <-runCtx.Done():
		t.Errorf("only %d of %d jobs ran before the timeout", done.Load(), total)
	}
	// Let the workers record the last completions, then stop them.
	waitFor(t, time.Minute, func() bool {
		counts, err := setup.Counts(ctx)
		return err == nil && len(counts) == 1 && counts[0].Status == queuety.JobCompleted && counts[0].Count == total
	})
	cancel()
	wg.Wait()
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Fatalf("job %d ran %d times", i, n)
		}
	}
	// The workers' own counts agree: every job claimed and recorded once.
	var claimed, succeeded, other int64
	for _, w := range all {
		st := w.Stats()
		claimed += st.Claimed
		succeeded += st.Succeeded
		other += st.Failed + st.Stale + st.HandedBack
	}
	if claimed != total || succeeded != total || other != 0 {
		t.Errorf("workers claimed %d and recorded %d successes and %d other outcomes; want %d, %d, 0",
			claimed, succeeded, other, total, total)
	}
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
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			id, err := c.Dispatch(ctx, "slow", queuety.State{"report": 7}, queuety.WithBackoff(queuety.BackoffSeconds(0)))
			if err != nil {
				t.Fatal(err)
			}

			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), childEnv+"="+dsn)
			var stderr strings.Builder
			child.Stderr = &stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, func() bool {
				j, err := c.Job(ctx, id)
				return err == nil && j.Status == queuety.JobProcessing
			})
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			state, _ := child.Process.Wait()
			if ws, ok := state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die of SIGKILL: %v (stderr: %s)", state, stderr.String())
			}
			j, _ := c.Job(ctx, id)
			if j.Status != queuety.JobProcessing || j.Attempts != 1 {
				t.Fatalf("after the kill: status %s attempts %d", j.Status, j.Attempts)
			}

			// Later (as seen by a fake clock past the stale timeout), another
			// process recovers the job and runs it.
			clock := queuety.NewFakeClock(time.Now().Add(queuety.DefaultStaleTimeout + time.Minute))
			c2, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			var ran atomic.Int64
			w := worker.New(c2, worker.NoMaintenance(), worker.WithLogger(quiet()))
			w.HandleJob("slow", func(_ context.Context, p queuety.Payload) error {
				if v, _ := p.Int("report"); v != 7 {
					t.Errorf("payload = %v", p)
				}
				ran.Add(1)
				return nil
			})
			st, err := w.RunOnce(ctx, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if st.Swept.JobsRecovered != 1 || ran.Load() != 1 {
				t.Fatalf("recovered %d, ran %d", st.Swept.JobsRecovered, ran.Load())
			}
			j, _ = c2.Job(ctx, id)
			if j.Status != queuety.JobCompleted || j.Attempts != 2 {
				t.Fatalf("final: status %s attempts %d", j.Status, j.Attempts)
			}
			logs, _ := c2.Logs(ctx, driver.LogFilter{JobID: id})
			var events []string
			for _, l := range logs {
				events = append(events, string(l.Event))
			}
			if got := strings.Join(events, ","); got != "retried,started,completed" {
				t.Fatalf("logs = %s", got)
			}
		})
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
