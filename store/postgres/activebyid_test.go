package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// TestActiveJobsByKeyOnFreshTable: on a jobs table without statistics,
// beside 20,000 pending jobs, the completion of 10 jobs by id (a
// workflow step's or a for-each branch's, JobComplete) and the read of
// 20 workflows' pending and processing jobs (a for-each step settling,
// JobListByWorkflows) read about as many index entries and rows as they
// find, and change or return the right jobs. Written as status IN
// ('pending', 'processing'), the predicate of the partial
// idx_handler_status, each read that index whole beside the primary key
// or the workflow index: 20,000 entries a statement.
func TestActiveJobsByKeyOnFreshTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	db := sq.SQLDB()
	_, err = db.ExecContext(ctx, "ALTER TABLE queuety_jobs SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	var ids []int64
	for range 20 {
		reqs := make([]queuety.JobRequest, 1000)
		for i := range reqs {
			reqs[i] = queuety.JobRequest{Handler: "h"}
		}
		got, err := q.DispatchMany(ctx, reqs)
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	// Jobs 0 to 399 belong to workflows 1 to 40, ten each (no workflow
	// rows: the statements read the jobs table only); every fourth is
	// processing, every fifth completed.
	_, err = db.ExecContext(ctx, "UPDATE queuety_jobs SET workflow_id = 1 + (id - ?) / 10, step_index = 0 WHERE id BETWEEN ? AND ?", ids[0], ids[0], ids[399])
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "UPDATE queuety_jobs SET status = 'processing' WHERE id BETWEEN ? AND ? AND (id - ?) % 4 = 3", ids[0], ids[399], ids[0])
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "UPDATE queuety_jobs SET status = 'completed', completed_at = LOCALTIMESTAMP(0) WHERE id BETWEEN ? AND ? AND (id - ?) % 5 = 4", ids[0], ids[399], ids[0])
	require.NoError(t, err)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	w := sq.WrapTx(tx)

	before := jobsRead(t, ctx, tx)
	wfs := make([]int64, 20)
	for i := range wfs {
		wfs[i] = int64(i + 1)
	}
	jobs, err := w.(driver.JobListManyTx).JobListByWorkflows(ctx, wfs, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
	require.NoError(t, err)
	assert.Less(t, jobsRead(t, ctx, tx)-before, int64(600), "rows and index entries read to list 20 workflows' active jobs")
	assert.Len(t, jobs, 160, "200 jobs, 40 of them completed")
	for _, j := range jobs {
		assert.Contains(t, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, j.Status)
	}

	before = jobsRead(t, ctx, tx)
	require.NoError(t, w.JobComplete(ctx, ids[:10], time.Now()))
	assert.Less(t, jobsRead(t, ctx, tx)-before, int64(60), "rows and index entries read to complete 10 jobs by id")
	got, err := w.JobGetMany(ctx, ids[:10], driver.LockNone)
	require.NoError(t, err)
	require.Len(t, got, 10)
	for _, j := range got {
		assert.Equal(t, driver.JobCompleted, j.Status, "job %d", j.ID)
	}
}
