package prom_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// TestWorkersGauge checks queuety_workers{status} on both stores: the
// registry's workers, live and gone by the client's clock.
func TestWorkersGauge(t *testing.T) {
	for _, store := range []string{"mysql", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			dsn := "sqlite://" + filepath.Join(t.TempDir(), "q.db")
			if store == "mysql" {
				dsn, _ = migrated.DSN(t)
			}
			now := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithClock(queuety.NewFakeClock(now)))
			require.NoError(t, err)
			defer c.Close()
			reg := prometheus.NewRegistry()
			require.NoError(t, reg.Register(prom.NewStoreCollector(c)))
			gauge := func() map[string]float64 {
				got, err := reg.Gather()
				require.NoError(t, err)
				fams := map[string]*dto.MetricFamily{}
				for _, f := range got {
					fams[f.GetName()] = f
				}
				return series(fams, "queuety_workers")
			}
			assert.Equal(t, map[string]float64{"live": 0, "gone": 0}, gauge(), "an empty registry")

			for i, last := range []time.Time{now, now.Add(-time.Second), now.Add(-time.Minute)} {
				w := &queuetytype.Worker{ID: string(rune('a' + i)), Host: "h", PID: i + 1, HeartbeatInterval: 3 * time.Second,
					StartedAt: now.Add(-time.Hour), LastHeartbeat: last}
				require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.WorkerSave(ctx, w) }))
			}
			assert.Equal(t, map[string]float64{"live": 2, "gone": 1}, gauge())
		})
	}
}
