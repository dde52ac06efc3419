package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchSQLite(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "unused.db")
	// The whole suite of scenarios at a tiny scale: about 20 s on a quiet
	// machine, several times that beside the other packages' tests, so it
	// gets more than run's minute. The figures are not checked, only that
	// every scenario ran.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := runCtx(ctx, t, nil, "bench", "--dsn", dsn, "--jobs", "300", "--workflows", "20", "--fanouts", "2x5", "--runs", "1", "--json",
		"--latency-for", "100ms", "--backlogs", "300", "--backlog-drain", "100", "--sweep-rows", "300", "--sweep-passes", "1")
	require.Equal(t, 0, r.code, "exit code; stderr: %s", r.stderr)
	var rep struct {
		Store   string `json:"store"`
		Machine struct {
			Cores int `json:"cores"`
		} `json:"machine"`
		Results []struct {
			Name   string  `json:"name"`
			Median float64 `json:"median"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "bad JSON %q", r.stdout)
	want := map[string]bool{"dispatch": true, "drain-1w": true, "drain-4w": true, "workflow-3step-4w": true, "fanout-2x5-4w": true, "fanout-2x5-4w-item": true,
		"raw-sql-ceiling-1c": true, "latency-inproc-p50": true, "latency-inproc-p99": true, "latency-xproc-p50": true,
		"latency-xproc-p99": true, "backlog-300-claim": true, "backlog-300-drain": true, "sweep-300-deadlines": true,
		"sweep-300-timeouts": true, "sweep-300-stale": true, "chain-inproc-p50": true, "chain-inproc-p99": true,
		"chain-xproc-p50": true, "chain-xproc-p99": true}
	if runtime.GOOS == "linux" {
		want["rss-drain-1w"] = true
	}
	for _, res := range rep.Results {
		assert.Positive(t, res.Median, "%s: median", res.Name)
		delete(want, res.Name)
	}
	assert.Equal(t, "sqlite", rep.Store, "store")
	assert.Equal(t, runtime.NumCPU(), rep.Machine.Cores, "machine: cores")
	assert.Empty(t, want, "missing scenarios")
	bad := run(t, nil, "bench", "--dsn", dsn, "--workers", "0")
	assert.Equal(t, 2, bad.code, "--workers 0: exit code")
	badFanOut := run(t, nil, "bench", "--dsn", dsn, "--fanouts", "10")
	assert.Equal(t, 2, badFanOut.code, "--fanouts 10: exit code")
	assert.Contains(t, badFanOut.stderr, "WORKFLOWSxITEMS", "--fanouts 10: message")
	badBacklogs := run(t, nil, "bench", "--dsn", dsn, "--backlogs", "1000,lots")
	assert.Equal(t, 2, badBacklogs.code, "--backlogs 1000,lots: exit code")
	assert.Contains(t, badBacklogs.stderr, "--backlogs", "--backlogs 1000,lots: message")
	badSweep := run(t, nil, "bench", "--dsn", dsn, "--sweep-rows", "-1")
	assert.Equal(t, 2, badSweep.code, "--sweep-rows -1: exit code")
}
