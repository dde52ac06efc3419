package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// olderVersion is a schema an older release left: before the state
// machine timers table (11) and the worker registry table (12).
const olderVersion = 10

// TestSkipMigrateOlderSchemaGatesSweeps: a store opened without migrating
// on tables at an older schema version reads when the sweeps are due
// without the tables it lacks, so an idle worker's sweeps stay behind
// their gate: over ten passes of the stale sweep, the activity-timeout
// and state-machine-timer sweeps run no statement, and the gate is read
// about once a pass, not before every sweep.
func TestSkipMigrateOlderSchemaGatesSweeps(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := testdb.DSN(t)
	require.NoError(t, openStore(t, dsn).MigrateTo(ctx, olderVersion))

	s := openStore(t, dsn)
	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, olderVersion, v, "schema version")
	for range 2 {
		_, err := s.MaintenanceDue(ctx)
		require.NoError(t, err, "read when the sweeps are due, at schema version %d", olderVersion)
	}

	p := testdb.NewStatementProxy(t, "127.0.0.1:3306", false)
	require.Contains(t, dsn, "127.0.0.1:3306")
	c, err := queuety.Open(ctx, strings.Replace(dsn, "127.0.0.1:3306", p.Addr, 1), queuety.SkipMigrate(), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	const every = 100 * time.Millisecond
	stale := make(chan error, 100)
	w := worker.New(c, worker.WithLogger(quietLog()), worker.PollInterval(time.Minute),
		worker.Maintenance(worker.Intervals{Stale: every, Watchdog: every, WaitTimer: every, Deadlines: every, ScheduleIdle: time.Hour, Jitter: -1}),
		worker.WithHooks(worker.Hooks{Swept: func(task string, _ int, err error) {
			if task == deadline.SweepStale {
				stale <- err
			}
		}}))
	w.HandleJob("idle", func(context.Context, queuety.Payload) error { return nil })
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
	pass := func() {
		t.Helper()
		select {
		case err := <-stale:
			require.NoError(t, err, "stale sweep")
		case <-ctx.Done():
			t.Fatal("the stale sweep did not run")
		}
	}
	for range 3 { // the start: the first reads
		pass()
	}
	p.KeepTexts()
	const passes = 10
	for range passes {
		pass()
	}
	var gateReads, activity, timers int
	for _, text := range p.Texts() {
		switch {
		case strings.HasPrefix(text, "SELECT (SELECT 1 FROM "+prefix+"queuety_jobs WHERE status = 'processing'"):
			gateReads++
		case strings.Contains(text, "schedule_to_start_at <="):
			activity++
		case strings.Contains(text, prefix+"queuety_go_machine_timers"):
			timers++
		}
	}
	t.Logf("over %d passes: %d reads of the gate, %d of the activity-timeout sweep, %d of the machine-timer sweep", passes, gateReads, activity, timers)
	assert.Zero(t, activity, "activity-timeout sweep reads: nothing is due")
	assert.Zero(t, timers, "machine-timer sweep reads: the table is missing")
	assert.LessOrEqual(t, gateReads, 2*passes+2, "reads of when the sweeps are due")
}
