package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// TestWorkerListShowsKilledWorkerGone starts a real worker process on
// each store, waits until worker list shows it live, kills it with
// SIGKILL and checks that worker list shows it gone within its TTL
// (queuetytype.GoneAfter missed renewals) and not before it stopped.
func TestWorkerListShowsKilledWorkerGone(t *testing.T) {
	t.Parallel()
	for name, newDSN := range map[string]func(t *testing.T) string{
		"sqlite": tempDSN,
		"mysql":  func(t *testing.T) string { dsn, _ := migrated.DSN(t); return dsn },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := newDSN(t)
			cmd := exec.Command(os.Args[0], "--dsn", dsn, "work", "--retention", "off")
			cmd.Env = append(os.Environ(), envChild+"=1", cli.EnvDSN+"=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			pid := cmd.Process.Pid
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})

			type row struct {
				ID, Status               string
				PID                      int
				HeartbeatIntervalSeconds float64 `json:"heartbeat_interval_seconds"`
			}
			status := func() (row, bool) {
				for _, r := range decode[[]row](t, mustRun(t, nil, "--dsn", dsn, "worker", "list", "--json")) {
					if r.PID == pid {
						return r, true
					}
				}
				return row{}, false
			}
			var live row
			require.Eventually(t, func() bool {
				r, ok := status()
				live = r
				return ok && r.Status == "live"
			}, 60*time.Second, 50*time.Millisecond, "worker list does not show the worker process live; its stderr:\n%s", &stderr)
			assert.InDelta(t, worker.IdleHeartbeatInterval.Seconds(), live.HeartbeatIntervalSeconds, 1e-9, "an idle worker's heartbeat interval")

			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			killed := time.Now()
			_ = cmd.Wait()
			ttl := time.Duration(queuetytype.GoneAfter) * worker.IdleHeartbeatInterval
			var gone time.Time
			missing := false
			require.Eventually(t, func() bool {
				r, ok := status()
				if !ok || r.Status == "gone" {
					gone, missing = time.Now(), !ok
					return true
				}
				return false
			}, ttl+30*time.Second, 100*time.Millisecond, "worker list does not show the killed worker gone")
			require.False(t, missing, "the killed worker's row disappeared before its retention")
			// The row shows gone once the last renewal, at most at the
			// kill, is older than the TTL: never much later than the TTL
			// after the kill (the slack is for reading worker list on a
			// loaded machine).
			assert.Less(t, gone.Sub(killed), ttl+5*time.Second, "gone %s after SIGKILL; the TTL is %s", gone.Sub(killed), ttl)
			r, _ := status()
			assert.Equal(t, live.ID, r.ID)
		})
	}
}
