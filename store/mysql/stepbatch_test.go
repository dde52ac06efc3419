package mysql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestStepBatchStatements pins what recording a batch of completed
// steps costs: the workflows are written by one guarded UPDATE from the
// rows the claim read, with no locking read before it, so a batch of 20
// steps is BEGIN, the workflows' UPDATE, the jobs' completion, the next
// jobs' INSERT, the events' INSERT, the log rows' INSERTs (40 rows: 32
// and 8) and COMMIT, and, as the process's first completion, the read of
// the highest depends_on (which tells whether a completed job may have
// dependents; read again about once a second). A workflow whose state changed after the claim (by
// case only, which MySQL's collation would take for the same) is not
// overwritten: the batch falls back to reading the rows under lock and
// advances from what they hold.
func TestStepBatchStatements(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	// No cross-process wake-up: its background sends after the dispatches
	// would run on the pool's connection and be counted with the batch.
	c, err := queuety.Open(ctx, dsn+"&wake=false", queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	db := clientseam.StoreOf(c).(*mysql.Store).DB
	e := clientseam.Engine(c)

	const n = 20
	def := queuety.WorkflowDefinition{Name: "batch", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"},
	}}
	ids := make([]int64, n)
	for i := range ids {
		ids[i], err = c.DispatchWorkflow(ctx, def, queuety.State{"name": "abc"})
		require.NoError(t, err)
	}
	claimAll := func(step int) []*engine.Result {
		t.Helper()
		claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{driver.DefaultQueue}, Handlers: []string{"s"}, Limit: 100})
		require.NoError(t, err)
		require.Len(t, claimed, n)
		results := make([]*engine.Result, n)
		for i, cj := range claimed {
			require.Equal(t, step, *cj.Job.StepIndex)
			results[i] = &engine.Result{Claimed: cj, Output: engine.State{fmt.Sprintf("out%d", step): i}, StartedAt: time.Now()}
		}
		return results
	}
	complete := func(results []*engine.Result) int64 {
		t.Helper()
		return testdb.CountStatements(t, db, func() {
			errs, err := e.CompleteSteps(ctx, results)
			require.NoError(t, err)
			for _, err := range errs {
				require.NoError(t, err)
			}
		})
	}

	first := complete(claimAll(0))
	t.Logf("statements for a batch of %d completed steps: %d", n, first)
	assert.Equal(t, int64(9), first, "statements for a batch of completed steps")

	// A state changed after the claim, in case only.
	results := claimAll(1)
	_, err = db.ExecContext(ctx, "UPDATE "+prefix+"queuety_workflows SET state = REPLACE(state, '\"abc\"', '\"ABC\"') WHERE id = ?", ids[3])
	require.NoError(t, err)
	complete(results)
	for i, id := range ids {
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 2, wf.CurrentStep, "workflow %d", i)
		want := `"name":"abc"`
		if i == 3 {
			want = `"name":"ABC"`
		}
		assert.Contains(t, string(wf.State), want, "workflow %d keeps the state it holds", i)
		assert.True(t, strings.Contains(string(wf.State), `"out0"`) && strings.Contains(string(wf.State), `"out1"`), "workflow %d merged both outputs: %s", i, wf.State)
	}

	last := complete(claimAll(2))
	t.Logf("statements for a batch of %d last steps: %d", n, last)
	for _, id := range ids {
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status)
	}
}
