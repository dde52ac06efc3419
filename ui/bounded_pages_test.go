package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// TestChartsReadBoundedRows checks that the charts page reads at most
// chartRows log rows and says when the window had more, and (on MySQL)
// that it runs as many statements with a thousand rows and forty queues
// as with a few.
func TestChartsReadBoundedRows(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		ctx := context.Background()
		now := time.Now().UTC()
		insert := func(n int, queue string) {
			t.Helper()
			one := 1
			logs := make([]*driver.LogEntry, n)
			for i := range logs {
				d := int64(i % 700)
				logs[i] = &driver.LogEntry{Handler: "h", Queue: queue, Event: driver.LogCompleted, Attempt: &one, DurationMS: &d,
					CreatedAt: now.Add(-time.Duration(i%50) * time.Minute)}
			}
			require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error { return tx.LogInsert(ctx, logs) }))
		}
		insert(20, "q00")
		b := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, Logger: quiet(), Clock: queuety.NewFakeClock(now)}))
		res := b.get("/charts")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.False(t, strings.Contains(res.body, `id="chart-truncated"`))

		ms, isMySQL := clientseam.StoreOf(c).(*mysql.Store)
		var few int64
		if isMySQL {
			few = testdb.CountStatements(t, ms.DB, func() { require.Equal(t, http.StatusOK, b.get("/charts").StatusCode) })
		}
		for i := range 40 {
			insert(25, fmt.Sprintf("q%02d", i))
		}
		old := chartRows
		chartRows = 500
		t.Cleanup(func() { chartRows = old })
		res = b.get("/charts")
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.True(t, strings.Contains(res.body, `id="chart-truncated"`), "the page says its counts are floors")
		assert.True(t, strings.Contains(res.body, "500+ completed"), "it counted the newest chartRows rows")
		if isMySQL {
			many := testdb.CountStatements(t, ms.DB, func() { require.Equal(t, http.StatusOK, b.get("/charts").StatusCode) })
			t.Logf("statements per charts page: %d with 20 rows on one queue, %d with 1020 rows on 41 queues", few, many)
			assert.Equal(t, few, many, "statements per charts page")
		}
	})
}

// TestBatchPagesAreBounded checks that the batches page lists a page of
// batches with a link to the older ones, and a batch's page a page of
// its jobs.
func TestBatchPagesAreBounded(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	var last int64
	for range batchesPerPage + 5 {
		id, err := c.NewBatch(queuety.JobRequest{Handler: "x"}).Dispatch(ctx)
		require.NoError(t, err)
		last = id
	}
	reqs := make([]queuety.JobRequest, batchJobsPage+7)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "y"}
	}
	big, err := c.NewBatch(reqs...).Dispatch(ctx)
	require.NoError(t, err)

	b := newBrowser(t, Handler(c, open))
	res := b.get("/batches")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, batchesPerPage, strings.Count(res.body, "<tr data-batch="))
	assert.True(t, strings.Contains(res.body, fmt.Sprintf(`data-batch="%d"`, big)), "newest first")
	next := fmt.Sprintf(`/batches?before=%d`, last-batchesPerPage+2)
	assert.True(t, strings.Contains(res.body, next), "a link to the older batches")
	res = b.get(next)
	assert.Equal(t, 6, strings.Count(res.body, "<tr data-batch="), "the older ones")

	res = b.get(fmt.Sprintf("/batches/%d", big))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, batchJobsPage, strings.Count(res.body, "<tr data-job="))
	assert.True(t, strings.Contains(res.body, `id="batch-jobs-next"`))
}

// TestWorkflowArtifactsAreBounded checks that a workflow's page lists at
// most workflowArtifacts artifacts, reads none of their contents, and
// says how many there are.
func TestWorkflowArtifactsAreBounded(t *testing.T) {
	c := openStore(t, "sqlite")
	ctx := context.Background()
	id, err := builder.Workflow("w").Then("a").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	for i := range workflowArtifacts + 3 {
		require.NoError(t, c.PutArtifact(ctx, id, fmt.Sprintf("part-%03d", i), bigString(64<<10), queuety.ArtifactKind("text")))
	}
	b := newBrowser(t, Handler(c, open))
	var res *response
	n := allocated(func() { res = b.get(fmt.Sprintf("/workflows/%d", id)) })
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, workflowArtifacts, strings.Count(res.body, "<tr data-artifact="))
	assert.True(t, strings.Contains(res.body, fmt.Sprintf("The first %d of %d artifacts", workflowArtifacts, workflowArtifacts+3)))
	t.Logf("the page of a workflow with %d artifacts of 64 KiB allocated %d KiB", workflowArtifacts+3, n>>10)
	assert.Less(t, n, uint64(2<<20), "the artifacts' contents are not read")
}
