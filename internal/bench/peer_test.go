package bench

import (
	"bytes"
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requirePostgres skips the test when PostgreSQL does not answer on
// 127.0.0.1:5432, and fails it instead under CI, where it runs.
func requirePostgres(t *testing.T) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:5432", 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not reachable on 127.0.0.1:5432 under CI: %v", err)
		}
		t.Skipf("PostgreSQL is not reachable on 127.0.0.1:5432: %v", err)
	}
	conn.Close()
}

// --peer river runs River's twin of each drain and River's own bench
// settings in the same run, and each drain reports its ratio to its twin.
func TestPeerRiverRunsBesideTheDrains(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	rep, results := runBench(t, SQLiteEnv{}, Config{Jobs: 300, Runs: 2, Concurrency: 20, Workers: []int{1},
		Scenarios: []string{"drain-1w", "river-bench"}, Peer: &Peer{Name: "river"}})
	require.NotNil(t, rep.Peer, "peer")
	assert.Equal(t, "river", rep.Peer.Name, "peer name")
	assert.Equal(t, "v0.51.2", rep.Peer.Version, "River's version")
	assert.Contains(t, rep.Peer.Server, "PostgreSQL", "peer's server")
	drain := requireResult(t, results, "drain-1w", "jobs/s", 2)
	twin := requireResult(t, results, "river-drain-1w", "jobs/s", 2)
	bench := requireResult(t, results, "river-bench", "jobs/s", 2)
	assert.Equal(t, map[string]float64{"clients": 1, "workers_per_client": 20, "fetch_cooldown_ms": 1}, twin.Extra, "the twin's settings")
	assert.Equal(t, map[string]float64{"clients": 1, "workers_per_client": 2000, "fetch_cooldown_ms": 100}, bench.Extra, "river bench's settings")
	assert.Len(t, twin.ClientCPU, 2, "the peer's CPU per job")
	assert.InDelta(t, drain.Median/twin.Median, drain.OfPeer, 1e-9, "drain over its twin")
	assert.InDelta(t, pairedRatio(drain.Runs, twin.Runs), drain.OfPeerPaired, 1e-9, "paired")
	assert.Zero(t, twin.OfCeiling, "the peer's drains get no share of our ceilings")
	var table bytes.Buffer
	rep.Format(&table)
	assert.Contains(t, table.String(), "peer river v0.51.2", "table")
	assert.Contains(t, table.String(), "x river-drain-1w", "table: the drain's ratio")
}

// Outside the source tree the peer cannot be built, and bench says so
// before it runs anything.
func TestPeerNeedsItsModule(t *testing.T) {
	_, err := findPeerDir(Peer{Name: "river", Dir: t.TempDir()})
	assert.ErrorContains(t, err, "is not its module directory", "a directory without the module")
	_, err = findPeerDir(Peer{Name: "sidekiq"})
	assert.ErrorContains(t, err, "unknown peer", "a peer bench does not know")

	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Run(ctx, SQLiteEnv{}, Config{Jobs: 10, Runs: 1, Scenarios: []string{"drain-1w"}, Peer: &Peer{Name: "river"}})
	assert.ErrorContains(t, err, "source tree", "bench run outside the source tree")
}
