package queuetytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytest"
	"github.com/queuety/queuety-go/queuetytype"
)

// importRows is application code under test: one batch job per row.
func importRows(ctx context.Context, q *queuety.Client, rows []string) error {
	reqs := make([]queuety.JobRequest, len(rows))
	for i, r := range rows {
		reqs[i] = queuety.JobRequest{Handler: "import_row", Payload: queuety.State{"row": r}}
	}
	_, err := q.NewBatch(reqs...).Name("import").Then("import_done").Dispatch(ctx)
	return err
}

// Assert that a batch was dispatched, as Queuety PHP's assert_batched does,
// optionally one that a function accepts.
func ExampleRequireBatched() {
	t := &testing.T{} // in a real test, the test's *testing.T
	kit := queuetytest.New(t)
	if err := importRows(context.Background(), kit.Client(), []string{"a", "b", "c"}); err != nil {
		panic(err)
	}

	b := queuetytest.RequireBatched(t, kit, func(b queuetytest.Batched) bool {
		return len(b.Jobs) == 3 && b.Batch.Options.Then == "import_done"
	})
	fmt.Println(b.Batch.Name, b.Handlers())
	// Output: import [import_row import_row import_row]
}

func TestRequireBatched(t *testing.T) {
	ctx := context.Background()
	kit := queuetytest.New(t)
	msg := requireFails(t, func(tb testing.TB) { queuetytest.RequireBatched(tb, kit, nil) }, "no batches were dispatched")
	assert.NotEmpty(t, msg)

	_, err := kit.Client().Dispatch(ctx, "import_row", nil) // not in a batch
	require.NoError(t, err)
	require.NoError(t, importRows(ctx, kit.Client(), []string{"a", "b"}))
	require.NoError(t, importRows(ctx, kit.Client(), []string{"c"}))

	all := queuetytest.Batches(t, kit)
	require.Len(t, all, 2)
	assert.Len(t, all[0].Jobs, 2, "oldest first")
	assert.Len(t, all[1].Jobs, 1)

	b := queuetytest.RequireBatched(t, kit, func(b queuetytest.Batched) bool { return len(b.Jobs) == 1 })
	assert.Equal(t, all[1].Batch.ID, b.Batch.ID)
	assert.Equal(t, "c", mustPayload(t, b.Jobs[0])["row"])

	requireFails(t, func(tb testing.TB) {
		queuetytest.RequireBatched(tb, kit, func(b queuetytest.Batched) bool { return len(b.Jobs) == 5 })
	}, "2 batches were dispatched, none matching", "import: 2 jobs [import_row, import_row]", "import: 1 jobs [import_row]")

	// A client is a BatchSource too.
	assert.Len(t, queuetytest.Batches(t, kit.Client()), 2)
}

func mustPayload(t *testing.T, j *queuetytype.Job) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(j.Payload, &m))
	return m
}
