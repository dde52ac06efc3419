package cli_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// registryFixture runs a worker on dsn that holds one job, and stores the
// row of a worker that stopped renewing ten minutes ago. It returns the
// running worker's row once the registry lists its job, and the gone
// worker's row.
func registryFixture(t *testing.T, dsn string) (live, gone *queuetytype.Worker) {
	t.Helper()
	ctx := context.Background()
	// The worker's clock runs half an hour ahead of the CLI's and stands
	// still: its renewals are never older than the CLI's now, however
	// slowly the test runs, and the registry keeps the gone row.
	ahead := queuety.NewFakeClock(time.Now().Add(30 * time.Minute))
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)), queuety.WithClock(ahead))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	gone = &queuetytype.Worker{ID: "old-host-77-abcdef", Host: "old-host", PID: 77, Version: "v0.0.9", Queues: []string{"default"},
		Concurrency: 2, Jobs: []int64{}, HeartbeatInterval: 3 * time.Second,
		StartedAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Second), LastHeartbeat: time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)}
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.WorkerSave(ctx, gone) }))

	release := make(chan struct{})
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)), worker.Queues("mail", "default"),
		worker.Concurrency(4), worker.LeaseInterval(50*time.Millisecond), worker.PollInterval(10*time.Millisecond))
	w.HandleJob("hold", func(context.Context, queuety.Payload) error { <-release; return nil })
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		close(release)
		cancel()
		assert.NoError(t, <-done)
	})
	id, err := c.Dispatch(ctx, "hold", nil, queuety.OnQueue("mail"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ws, err := c.Workers(ctx)
		if err != nil || len(ws) != 2 {
			return false
		}
		i := slices.IndexFunc(ws, func(w *queuetytype.Worker) bool { return w.PID == os.Getpid() })
		if i < 0 || !slices.Equal(ws[i].Jobs, []int64{id}) {
			return false
		}
		live = ws[i]
		return true
	}, 30*time.Second, 10*time.Millisecond, "the registry does not list the worker with its job")
	return live, gone
}

// TestWorkerList checks worker list, as a table and as JSON, on both
// stores: the running worker with its queues, handlers and job, and a
// worker that stopped renewing, shown as gone.
func TestWorkerList(t *testing.T) {
	t.Parallel()
	for name, newDSN := range map[string]func(t *testing.T) string{
		"sqlite": tempDSN,
		"mysql":  func(t *testing.T) string { dsn, _ := migrated.DSN(t); return dsn },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := newDSN(t)
			live, gone := registryFixture(t, dsn)

			out := mustRun(t, nil, "--dsn", dsn, "worker", "list")
			assert.Regexp(t, `(?m)^ID\s+HOST\s+PID\s+VERSION\s+STATUS\s+QUEUES\s+CONCURRENCY\s+JOBS\s+STARTED AT\s+LAST HEARTBEAT$`, out)
			assert.Regexp(t, `(?m)^old-host-77-abcdef\s+old-host\s+77\s+v0\.0\.9\s+gone\s+default\s+2\s+-\s`, out)
			assert.Regexp(t, `(?m)^`+live.ID+`\s+\S+\s+`+strconv.Itoa(os.Getpid())+`\s+\S+\s+live\s+mail,default\s+4\s+`+strconv.FormatInt(live.Jobs[0], 10)+`\s`, out)

			type row struct {
				ID, Host, Version, Status string
				PID, Concurrency          int
				Queues, Handlers          []string
				Jobs                      []int64
				StartedAt                 string  `json:"started_at"`
				LastHeartbeatAt           string  `json:"last_heartbeat_at"`
				HeartbeatIntervalSeconds  float64 `json:"heartbeat_interval_seconds"`
			}
			rows := decode[[]row](t, mustRun(t, nil, "--dsn", dsn, "worker", "list", "--json"))
			require.Len(t, rows, 2)
			assert.Equal(t, row{ID: gone.ID, Host: "old-host", Version: "v0.0.9", Status: "gone", PID: 77, Concurrency: 2,
				Queues: []string{"default"}, Handlers: []string{}, Jobs: []int64{}, StartedAt: gone.StartedAt.Format(time.RFC3339),
				LastHeartbeatAt: gone.LastHeartbeat.Format(time.RFC3339), HeartbeatIntervalSeconds: 3}, rows[0], "the gone worker, oldest first")
			assert.Equal(t, live.ID, rows[1].ID)
			assert.Equal(t, "live", rows[1].Status)
			assert.Equal(t, os.Getpid(), rows[1].PID)
			assert.Equal(t, queuety.Version(), rows[1].Version)
			assert.Equal(t, []string{"mail", "default"}, rows[1].Queues)
			assert.Equal(t, []string{"hold"}, rows[1].Handlers)
			assert.Equal(t, 4, rows[1].Concurrency)
			assert.Equal(t, live.Jobs, rows[1].Jobs)
			assert.InDelta(t, 0.05, rows[1].HeartbeatIntervalSeconds, 1e-9)
		})
	}
}

// TestWorkerListEmpty checks the text of an empty registry.
func TestWorkerListEmpty(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	assert.Equal(t, "No workers registered.\n", mustRun(t, nil, "--dsn", dsn, "worker", "list"))
	assert.Equal(t, "[]\n", mustRun(t, nil, "--dsn", dsn, "worker", "list", "--json"))
}
