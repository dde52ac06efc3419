package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestLargeForEachStateWrittenAsDecodedAfresh: the branch results of a
// for-each step with a large state (cached decoded between batches,
// its entries' encodings remembered, its results put in order without
// being read) are written exactly as a worker that decodes the state
// afresh for every batch writes them. Two workflows over the same items
// get the same branch results in the same batches, one recorded by one
// client throughout, the other by a new client each batch; after every
// batch their stored states are the same bytes but for the job ids.
func TestLargeForEachStateWrittenAsDecodedAfresh(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	dsn += "&wake=false"
	open := func() *queuety.Client {
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
		require.NoError(t, err)
		return c
	}
	warm := open()
	defer warm.Close()
	const items = 300
	list := make([]any, items)
	for i := range list {
		list[i] = fmt.Sprintf("item %03d %s", i, strings.Repeat("x/é", 40))
	}
	wf := builder.Workflow("large_fan_out").ForEach("items", "item", builder.ResultKey("out"))
	var ids [2]int64
	for i := range ids {
		id, err := wf.Dispatch(ctx, warm, queuety.State{"items": list, "n": i})
		require.NoError(t, err)
		ids[i] = id
	}
	eng := clientseam.Engine(warm)
	claim := func(handler string, want int) []*engine.Claimed {
		t.Helper()
		cjs, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{handler}, Limit: 1000})
		require.NoError(t, err)
		require.Len(t, cjs, want, handler)
		return cjs
	}
	complete := func(e *engine.Engine, cjs []*engine.Claimed) {
		t.Helper()
		results := make([]*engine.Result, len(cjs))
		for i, cj := range cjs {
			_, index, _ := cj.ForEachItem()
			results[i] = &engine.Result{Claimed: cj, Output: engine.State{"index": index, "note": "a/b"}}
		}
		errs, err := e.CompleteSteps(ctx, results)
		require.NoError(t, err)
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
	complete(eng, claim(engine.HandlerForEach, 2))
	byWF := map[int64]map[int]*engine.Claimed{}
	for _, cj := range claim("item", 2*items) {
		_, index, ok := cj.ForEachItem()
		require.True(t, ok)
		if byWF[cj.Job.WorkflowID] == nil {
			byWF[cj.Job.WorkflowID] = map[int]*engine.Claimed{}
		}
		byWF[cj.Job.WorkflowID][index] = cj
	}
	db := clientseam.StoreOf(warm).(*mysql.Store).DB
	order := rand.New(rand.NewPCG(3, 4)).Perm(items)
	for done := 0; done < items; {
		n := min(items-done, 17+done%23)
		var a, b []*engine.Claimed
		for _, index := range order[done : done+n] {
			a = append(a, byWF[ids[0]][index])
			b = append(b, byWF[ids[1]][index])
		}
		done += n
		complete(eng, a)
		cold := open()
		complete(clientseam.Engine(cold), b)
		cold.Close()
		sa, sb := storedState(t, db, prefix, ids[0]), storedState(t, db, prefix, ids[1])
		require.Greater(t, len(sa), 64<<10, "a state the engine caches")
		requireSameState(t, withoutJobIDs(sb), withoutJobIDs(sa), done)
	}
	d, err := warm.DescribeWorkflow(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowCompleted, d.Status)
}

func storedState(t *testing.T, db *sql.DB, prefix string, id int64) string {
	t.Helper()
	var state string
	require.NoError(t, db.QueryRow("SELECT state FROM "+prefix+"queuety_workflows WHERE id = ?", id).Scan(&state))
	return state
}

// requireSameState fails with where two states first differ.
func requireSameState(t *testing.T, want, got string, done int) {
	t.Helper()
	if want == got {
		return
	}
	i := 0
	for i < min(len(want), len(got)) && want[i] == got[i] {
		i++
	}
	from := max(0, i-80)
	t.Fatalf("states after %d branches differ at byte %d:\n got …%s…\nwant …%s…", done, i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
}

var jobIDField = regexp.MustCompile(`"job_id":\d+`)

// withoutJobIDs blanks what differs between the two workflows' states:
// the job ids and the "n" each was dispatched with.
func withoutJobIDs(state string) string {
	state = jobIDField.ReplaceAllString(state, `"job_id":0`)
	return regexp.MustCompile(`"n":\d+`).ReplaceAllString(state, `"n":0`)
}
