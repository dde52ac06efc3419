package otelqueuety_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/metrics/otelqueuety"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// TestScheduleSlotsMissed counts the slots a late schedule tick skipped:
// five hourly slots pass without a tick, and under catch-up none the tick
// fires nothing for them.
func TestScheduleSlotsMissed(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelqueuety.New(otelqueuety.Config{MeterProvider: mp})
	require.NoError(t, err)
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 30, 0, 0, time.UTC))
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithClock(clock),
		queuety.WithLogger(quiet()), queuety.WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Schedule("hourly", nil).Cron("@hourly").CatchUp(queuetytype.CatchUpNone).Save(ctx)
	require.NoError(t, err)

	clock.Advance(5 * time.Hour) // 10:00 .. 14:00 due
	fired, err := deadline.New(c).Schedules(ctx)
	require.NoError(t, err)
	assert.Zero(t, fired, "runs fired")
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	assert.Equal(t, map[string]int64{"": 5}, sums(t, rm, "queuety.schedule.slots_missed"), "slots missed")
}
