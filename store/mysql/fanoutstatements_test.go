package mysql_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestForEachExpansionsShareStatements: the for_each placeholders of
// several workflows recorded together are expanded in one transaction
// whose statements do not grow with the workflows (the workflows and the
// placeholders locked, the placeholders completed, the workflows written,
// the branch jobs, events and log rows inserted, one statement each),
// instead of a transaction of eight statements per workflow.
func TestForEachExpansionsShareStatements(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	// No cross-process wake-up: its background sends after the inserts
	// would run on the pool's connection and be counted.
	dsn += "&wake=false"
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	const workflows, items = 12, 3
	wf := builder.Workflow("expand_batch").ForEach("items", "item", builder.ResultKey("out"))
	for range workflows {
		_, err := wf.Dispatch(ctx, c, queuety.State{"items": []any{"a", "b", "c"}})
		require.NoError(t, err)
	}
	eng := clientseam.Engine(c)
	claimed, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{engine.HandlerForEach}, Limit: workflows})
	require.NoError(t, err)
	require.Len(t, claimed, workflows)
	results := make([]*engine.Result, len(claimed))
	for i, cj := range claimed {
		results[i] = &engine.Result{Claimed: cj}
	}
	var errs []error
	n := testdb.CountStatements(t, clientseam.StoreOf(c).(*mysql.Store).DB, func() {
		errs, err = eng.CompleteSteps(ctx, results)
		require.NoError(t, err)
	})
	for i, e := range errs {
		assert.NoErrorf(t, e, "placeholder %d", i)
	}
	t.Logf("%d placeholders expanded in %d statements", workflows, n)
	assert.LessOrEqual(t, n, int64(12), "statements to expand %d placeholders", workflows)
	branches, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"item"}, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, branches, workflows*items, "branch jobs")
}
