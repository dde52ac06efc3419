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

// TestForEachSettlementsShareStatements: the last branches of several
// workflows' for-each steps recorded together settle every step in one
// transaction, and the open jobs that settling buries are read and
// locked for all of those workflows with one statement, instead of one
// locked read per workflow settled.
func TestForEachSettlementsShareStatements(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	dsn += "&wake=false" // no background statements on the pool's connection
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	settle := func(workflows int) (int64, []int64) {
		t.Helper()
		wf := builder.Workflow("settle_batch").ForEach("items", "item", builder.ResultKey("out"))
		var ids []int64
		for range workflows {
			id, err := wf.Dispatch(ctx, c, queuety.State{"items": []any{"a", "b"}})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		eng := clientseam.Engine(c)
		complete := func(handler string, want int) []error {
			t.Helper()
			claimed, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{handler}, Limit: 100})
			require.NoError(t, err)
			require.Len(t, claimed, want, handler)
			results := make([]*engine.Result, len(claimed))
			for i, cj := range claimed {
				results[i] = &engine.Result{Claimed: cj, Output: engine.State{"done": true}}
			}
			errs, err := eng.CompleteSteps(ctx, results)
			require.NoError(t, err)
			return errs
		}
		complete(engine.HandlerForEach, workflows)
		var errs []error
		n := testdb.CountStatements(t, clientseam.StoreOf(c).(*mysql.Store).DB, func() {
			errs = complete("item", 2*workflows)
		})
		for i, e := range errs {
			assert.NoErrorf(t, e, "branch %d", i)
		}
		return n, ids
	}
	one, _ := settle(1)
	// The claim of the branches is counted too: it does not grow with
	// the workflows either.
	n, ids := settle(8)
	t.Logf("one workflow settled in %d statements, eight in %d", one, n)
	assert.LessOrEqual(t, n, one+2, "statements to settle 8 workflows")
	for _, id := range ids {
		st, err := c.DescribeWorkflow(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, st.Status, "workflow %d", id)
	}
}

// TestForEachBranchesOwnTheirState: the branches of one workflow claimed
// together share one conversion of its public state, and each handler
// gets a copy of its own: what one changes in its State, at any depth,
// neither the other branches nor the stored state see.
func TestForEachBranchesOwnTheirState(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn+"&wake=false", queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	items := []any{map[string]any{"n": 1, "tags": []any{"a"}}, map[string]any{"n": 2, "tags": []any{"b"}}, map[string]any{"n": 3, "tags": []any{"c"}}}
	initial := queuety.State{"items": items, "config": map[string]any{"depth": map[string]any{"k": "v"}, "list": []any{1, 2}}}
	id, err := builder.Workflow("own_state").ForEach("items", "item", builder.ResultKey("out")).Dispatch(ctx, c, initial)
	require.NoError(t, err)
	eng := clientseam.Engine(c)
	placeholder, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{engine.HandlerForEach}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, placeholder, 1)
	_, err = eng.CompleteSteps(ctx, []*engine.Result{{Claimed: placeholder[0]}})
	require.NoError(t, err)
	branches, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"item"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, branches, 3)
	want := branches[1].State()
	first := branches[0].State()
	first["added"] = true
	first["items"].([]any)[0] = "replaced"
	first["items"].([]any)[1].(map[string]any)["n"] = 99
	first["items"].([]any)[2].(map[string]any)["tags"].([]any)[0] = "z"
	first["config"].(map[string]any)["depth"].(map[string]any)["k"] = "changed"
	first["config"].(map[string]any)["list"].([]any)[1] = 42
	for _, b := range branches[1:] {
		assert.Equal(t, want, b.State(), "a branch claimed with the one that changed its state")
	}
	assert.NotContains(t, want, "added")
	assert.Equal(t, "v", want["config"].(map[string]any)["depth"].(map[string]any)["k"])
	assert.EqualValues(t, 1, want["items"].([]any)[0].(map[string]any)["n"])
	results := make([]*engine.Result, len(branches))
	for i, cj := range branches {
		results[i] = &engine.Result{Claimed: cj, Output: engine.State{"i": i}}
	}
	_, err = eng.CompleteSteps(ctx, results)
	require.NoError(t, err)
	d, err := c.DescribeWorkflow(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, d.Status)
	assert.Equal(t, want["config"], d.State["config"], "the stored state")
	assert.Equal(t, want["items"], d.State["items"], "the stored items")
}
