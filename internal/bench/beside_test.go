package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuetytype"
)

// A beside drain runs the no-op jobs to completion past a backlog of
// another handler's jobs ahead of them, and leaves that backlog pending.
func TestDrainBesideLeavesTheOtherHandlersBacklogPending(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, c, dsn := freshMySQL(ctx, t)

	rate, err := drainBeside(ctx, c, dsn, 300, 1000, 2, 20)
	require.NoError(t, err)
	assert.Positive(t, rate, "jobs/s")
	counts, err := c.Counts(ctx)
	require.NoError(t, err)
	got := map[queuetytype.JobStatus]int64{}
	for _, n := range counts {
		got[n.Status] += n.Count
	}
	assert.Equal(t, map[queuetytype.JobStatus]int64{queuetytype.JobCompleted: 300, queuetytype.JobPending: 1000}, got, "jobs by status")
	others, err := c.ListJobs(ctx, queuetytype.JobFilter{Status: queuetytype.JobPending, Handler: besideHandler, Limit: 1})
	require.NoError(t, err)
	require.Len(t, others, 1, "a pending job of the other handler")
	first, err := c.ListJobs(ctx, queuetytype.JobFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, first, 1, "the first job")
	assert.Equal(t, besideHandler, first[0].Handler, "the backlog was dispatched first, ahead in claim order")
}

// drain-<N>w-beside[-<K>k] runs only when named, and reports jobs/s and
// CPU like the other drains.
func TestBesideScenarioRunsWhenNamed(t *testing.T) {
	t.Parallel()
	env, err := EnvFor(testdb.BaseDSN(t))
	require.NoError(t, err)
	_, results := runBench(t, env, Config{Jobs: 200, Runs: 1, Concurrency: 20, Scenarios: []string{"drain-2w-beside-1k"}})
	r := requireResult(t, results, "drain-2w-beside-1k", "jobs/s", 1)
	assert.Len(t, r.ClientCPU, 1, "this process's CPU per job")

	assert.Empty(t, besideScenarios(Config{Workers: []int{1, 4}}), "not in the default list")
	for name, want := range map[string][2]int{
		"drain-4w-beside":     {4, 50000},
		"drain-4w-beside-5k":  {4, 5000},
		"drain-1w-beside-50k": {1, 50000},
	} {
		w, k, ok := parseBeside(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, [2]int{w, k}, name)
	}
	for _, name := range []string{"drain-4w", "drain-4w-held", "drain-0w-beside", "drain-4w-beside-", "drain-4w-beside-5", "drain-4w-beside-05k", "drain-x-beside", "drain-4w-besidex"} {
		_, _, ok := parseBeside(name)
		assert.False(t, ok, name)
	}
}
