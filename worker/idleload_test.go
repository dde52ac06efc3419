package worker_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/postgres"
	"github.com/queuety/queuety-go/worker"
)

// TestIdleWorkerLoad: an idle worker with the default settings (the
// maintenance on, the cross-process wake-up live) costs the database at
// most maxPerSec statements a second, on MariaDB and on PostgreSQL,
// counted on every connection of its client through a counting proxy.
func TestIdleWorkerLoad(t *testing.T) {
	const maxPerSec = 0.75 // measured: about 0.53 on MariaDB, 0.48 on PostgreSQL
	if testing.Short() {
		t.Skip("counts statements over a window of seconds")
	}
	mysqlDSN, _ := testdb.DSN(t)
	pgDSN, _ := testdb.PostgresDSN(t)
	for _, tc := range []struct {
		name, dsn, server string
		postgres          bool
	}{
		{"mysql", mysqlDSN, "127.0.0.1:3306", false},
		{"postgres", pgDSN, "127.0.0.1:5432", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Contains(t, tc.dsn, tc.server)
			p := testdb.NewStatementProxy(t, tc.server, tc.postgres)
			dsn := strings.Replace(tc.dsn, tc.server, p.Addr, 1)
			if tc.postgres {
				dsn += "&sslmode=disable" // the proxy reads the messages
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			w := worker.New(c, worker.WithLogger(quiet()))
			w.HandleJob("idle.job", func(context.Context, queuety.Payload) error { return nil })
			run := runWorker(t, w)
			time.Sleep(5 * time.Second) // the start: every sweep runs once, the listener connects
			p.KeepTexts()
			const window = 60 * time.Second // one run of the 60 s sweeps and of the registry prune
			before := p.Count()
			time.Sleep(window)
			n := p.Count() - before
			texts := p.Texts()
			require.NoError(t, run.stop(t))
			perSec := float64(n) / window.Seconds()
			t.Logf("%d statements in %s: %.2f/s", n, window, perSec)
			if perSec > maxPerSec || testing.Verbose() {
				seen := map[string]int{}
				for _, s := range texts {
					seen[s]++
				}
				var lines []string
				for s, k := range seen {
					lines = append(lines, fmt.Sprintf("%6d  %s", k, s))
				}
				sort.Strings(lines)
				msg := fmt.Sprintf("%.2f statements a second (at most %.2f wanted):\n%s", perSec, maxPerSec, strings.Join(lines, "\n"))
				if perSec > maxPerSec {
					t.Fatal("an idle worker ran " + msg)
				}
				t.Log(msg)
			}
		})
	}
}
