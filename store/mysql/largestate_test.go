package mysql_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestLargeStatesWrittenBound: a workflow's large state is written with
// the prepared single-row UPDATE, its bytes bound rather than escaped
// into the statement's text (the server's scan of a long literal cost
// more than the rest of the write), alone or among small ones in
// WorkflowUpdateMany, and every row reads back as written.
func TestLargeStatesWrittenBound(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn+"&wake=false", queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	ids := make([]int64, 3)
	for i := range ids {
		ids[i], err = builder.Workflow("large_state").Then("step").Dispatch(ctx, c, queuety.State{"n": i})
		require.NoError(t, err)
	}
	st := clientseam.StoreOf(c).(*mysql.Store)
	st.DB.SetMaxOpenConns(1) // the session counters below are the transactions' own
	executes := func() int64 {
		t.Helper()
		var name string
		var n int64
		require.NoError(t, st.DB.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_execute'").Scan(&name, &n))
		return n
	}
	state := func(i int, size int) []byte {
		// Quotes, backslashes and line breaks: what escaping changes.
		b, err := json.Marshal(map[string]any{"n": i, "blob": strings.Repeat("a\"b\\c'd\n\x00", size/8)})
		require.NoError(t, err)
		return b
	}
	// write writes states and returns the prepared statements executed.
	write := func(states [][]byte) int64 {
		t.Helper()
		before := executes()
		require.NoError(t, st.InTx(ctx, func(tx driver.Tx) error {
			wfs, err := tx.WorkflowGetMany(ctx, ids[:len(states)], driver.LockUpdate)
			if err != nil {
				return err
			}
			for i, wf := range wfs {
				wf.State = states[i]
			}
			if len(wfs) == 1 {
				return tx.WorkflowUpdate(ctx, wfs[0])
			}
			return tx.WorkflowUpdateMany(ctx, wfs)
		}))
		n := executes() - before
		require.NoError(t, st.InTx(ctx, func(tx driver.Tx) error {
			for i, want := range states {
				wf, err := tx.WorkflowGet(ctx, ids[i], driver.LockNone)
				if err != nil {
					return err
				}
				assert.Equal(t, string(want), string(wf.State), "workflow %d's state as read back", i)
			}
			return nil
		}))
		return n
	}
	// The first write of a statement notes it; the store prepares it
	// before its next transaction.
	write([][]byte{state(0, 64<<10)})
	assert.Equal(t, int64(1), write([][]byte{state(0, 80<<10)}), "prepared executions writing one large state")
	// The small rows on either side of the large one are rows of one
	// each, which go through the same prepared statement.
	assert.Equal(t, int64(3), write([][]byte{state(0, 1<<10), state(1, 96<<10), state(2, 2<<10)}),
		"prepared executions writing a large state among small ones")
	assert.Equal(t, int64(0), write([][]byte{state(0, 1<<10), state(1, 2<<10), state(2, 3<<10)}),
		"prepared executions writing small states only (one multi-row UPDATE)")
}
