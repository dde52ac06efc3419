package ui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// envWorkerDSN, when set, makes TestWorkerProcess run a worker on that
// store until it is killed: the worker process of TestWorkersBrowser.
const envWorkerDSN = "QUEUETY_UI_TEST_WORKER_DSN"

// workerLease is the lease interval (and so the registry's heartbeat
// interval) of the worker process: it is gone after GoneAfter of them.
const workerLease = 250 * time.Millisecond

// TestWorkerProcess is not a test of its own: run by TestWorkersBrowser
// as a separate process, it runs a worker that claims "proc.hold" jobs,
// whose handler blocks until the process dies, and renews its registry
// row every workerLease.
func TestWorkerProcess(t *testing.T) {
	dsn := os.Getenv(envWorkerDSN)
	if dsn == "" {
		t.Skip("the worker process of TestWorkersBrowser")
	}
	ctx := context.Background()
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	w := worker.New(c, worker.Queues("held"), worker.Concurrency(2), worker.LeaseInterval(workerLease), worker.WithLogger(quiet()),
		worker.PollInterval(20*time.Millisecond))
	w.HandleJob("proc.hold", func(ctx context.Context, _ queuety.Payload) error {
		<-ctx.Done()
		return ctx.Err()
	})
	_ = w.Run(ctx) // until SIGKILL
}

// startWorkerProcess starts TestWorkerProcess on dsn in a new process of
// the test binary and kills it when the test ends.
func startWorkerProcess(t *testing.T, dsn string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("uses SIGKILL")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envWorkerDSN+"="+dsn)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestWorkersBrowser runs a real worker process on both stores, shows it
// on the workers page in headless Chromium with the job it holds, kills
// it with SIGKILL and waits for the page (refreshing itself) to show it
// gone once it missed GoneAfter heartbeats.
func TestWorkersBrowser(t *testing.T) {
	for _, name := range []string{"mysql", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			var dsn string
			if name == "mysql" {
				dsn, _ = migrated.DSN(t)
			} else {
				dsn = "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
			}
			ctx := context.Background()
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			job, err := c.Dispatch(ctx, "proc.hold", nil, queuety.OnQueue("held"))
			require.NoError(t, err)

			p := newPageSession(t, c, Options{RefreshInterval: 200 * time.Millisecond})
			proc := startWorkerProcess(t, dsn)
			pid := proc.Process.Pid

			// The worker registers, claims the job and shows it at its
			// next renewal.
			p.open("/workers", "#workers")
			var id string
			require.Eventually(t, func() bool {
				list, err := c.Workers(ctx)
				require.NoError(t, err)
				for _, w := range list {
					if w.PID == pid && len(w.Jobs) == 1 {
						id = w.ID
						return true
					}
				}
				return false
			}, time.Minute, 20*time.Millisecond, "the worker process registers and shows the job it runs")
			row := fmt.Sprintf(`#workers tr[data-worker="%s"]`, id)
			p.step("the page shows it live", chromedp.WaitVisible(chromedp.CSS(row+` .s-live`)),
				chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`%s a[href="/jobs/%d"]`, row, job))))
			assert.Contains(t, p.text(row), strconv.Itoa(pid))
			assert.Contains(t, p.text(row), "held")
			p.shot("workers-live")

			// SIGKILL: no clean stop, the row stays and goes quiet.
			require.NoError(t, proc.Process.Signal(syscall.SIGKILL))
			_, _ = proc.Process.Wait()
			killed := time.Now()
			p.step("the page shows it gone", chromedp.WaitVisible(chromedp.CSS(row+` .s-gone`)))
			waited := time.Since(killed)
			t.Logf("shown gone %s after SIGKILL (lease %s, gone after %d missed)", waited.Round(time.Millisecond), workerLease, queuetytype.GoneAfter)
			list, err := c.Workers(ctx)
			require.NoError(t, err)
			var gone *queuetytype.Worker
			for _, w := range list {
				if w.ID == id {
					gone = w
				}
			}
			require.NotNil(t, gone, "the killed worker's row is kept")
			assert.True(t, gone.Gone)
			assert.Equal(t, workerLease, gone.HeartbeatInterval)
			assert.True(t, strings.Contains(p.text("#workers-summary"), "0 live, 1 gone"), p.text("#workers-summary"))
			p.shot("workers-gone")
		})
	}
}
