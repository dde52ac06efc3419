package prom_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// TestScheduleSlotsMissed counts the slots a late schedule tick merged:
// five hourly slots pass without a tick, and the tick fires one run for
// them under catch-up once, so four are missed.
func TestScheduleSlotsMissed(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	require.NoError(t, err)
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 30, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock),
		queuety.WithLogger(quiet()), queuety.WithObserver(m))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Schedule("hourly", nil).Cron("@hourly").Save(ctx)
	require.NoError(t, err)

	clock.Advance(5 * time.Hour) // 10:00 .. 14:00 due
	fired, err := deadline.New(c).Schedules(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, fired, "runs fired")
	n, err := testutil.GatherAndCount(reg, "queuety_schedule_slots_missed_total")
	require.NoError(t, err)
	require.Equal(t, 1, n, "series")
	fams, err := reg.Gather()
	require.NoError(t, err)
	var missed float64
	for _, f := range fams {
		if f.GetName() == "queuety_schedule_slots_missed_total" {
			missed = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	assert.Equal(t, 4.0, missed, "slots missed")
}
