package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// TestIdleWorkerStartsUnwokenAndDelayedJobs: an idle worker whose idle
// poll interval is long (20 s) still starts, on MariaDB and on
// PostgreSQL, a job committed behind the wake-up's back (DispatchTx sends
// none, as Queuety PHP's dispatches do not) within that interval, and a
// delayed job dispatched by another client at its due time, far sooner
// than the interval: it reads the next due time after the wake-up and
// sleeps until then.
func TestIdleWorkerStartsUnwokenAndDelayedJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits up to the idle poll interval")
	}
	mysqlDSN, _ := testdb.DSN(t)
	pgDSN, _ := testdb.PostgresDSN(t)
	const idlePoll = 20 * time.Second
	for name, dsn := range map[string]string{"mysql": mysqlDSN, "postgres": pgDSN} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			other, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
			require.NoError(t, err)
			t.Cleanup(func() { other.Close() })

			type start struct {
				kind string
				at   time.Time
			}
			started := make(chan start, 4)
			w := worker.New(c, worker.IdlePollInterval(idlePoll), worker.WithLogger(quiet()))
			w.HandleJob("idle.job", func(_ context.Context, p queuety.Payload) error {
				started <- start{kind: p["kind"].(string), at: time.Now()}
				return nil
			})
			run := runWorker(t, w)

			// Behind the wake-up's back: found within the idle poll interval.
			tx, err := other.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = other.DispatchTx(ctx, tx, "idle.job", queuety.Payload{"kind": "unwoken"})
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			committed := time.Now()
			var got start
			select {
			case got = <-started:
			case <-time.After(idlePoll + 5*time.Second):
				t.Fatal("the job committed without a wake-up did not start within the idle poll interval")
			}
			require.Equal(t, "unwoken", got.kind)
			assert.Less(t, got.at.Sub(committed), idlePoll+2*time.Second, "started after the idle poll interval")

			// Let the worker go idle again (its adaptive polling after
			// work backs off to the poll interval), then dispatch a job
			// due in 4 s through another client, which wakes it.
			time.Sleep(3 * time.Second)
			_, err = other.Dispatch(ctx, "idle.job", queuety.Payload{"kind": "delayed"}, queuety.Delay(4*time.Second))
			require.NoError(t, err)
			due := time.Now().Add(4 * time.Second)
			got = receive(t, started, "the delayed job")
			require.Equal(t, "delayed", got.kind)
			late := got.at.Sub(due)
			t.Logf("the delayed job started %s after its due time", late)
			assert.Greater(t, late, -1100*time.Millisecond, "started before it was due") // due times are whole seconds, rounded up
			assert.Less(t, late, 1500*time.Millisecond, "started late: the worker polled instead of sleeping until the due time")
			require.NoError(t, run.stop(t))
		})
	}
}
