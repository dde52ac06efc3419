package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// TestWorkflowJobListLocksOnlyItsWorkflow: a locked read of one workflow's
// open jobs (what settling a for_each step, failing or cancelling a
// workflow do) must not wait for rows of other workflows. With most jobs
// completed, the planner likes to read the status index for the few open
// ones; in a locking read that locks every open job of every workflow,
// and workers settling different workflows deadlock on each other's
// rows and hold up lease renewals (seen as jobs run twice under load).
func TestWorkflowJobListLocksOnlyItsWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	db := c.DB() // other connections of the pool: other transactions
	jobs := prefix + "queuety_jobs"

	// 2,000 workflows of 11 completed jobs; workflows 1 and 2 have two
	// open jobs each.
	_, err = db.ExecContext(ctx, "INSERT INTO "+jobs+" (handler, payload, status, workflow_id, step_index) "+
		"SELECT 'h', '{}', 'completed', seq DIV 11 + 1, 0 FROM seq_0_to_21999")
	require.NoError(t, err)
	var open [3][]int64 // by workflow id
	for wf := int64(1); wf <= 2; wf++ {
		for _, status := range []string{"pending", "processing"} {
			res, err := db.ExecContext(ctx, "INSERT INTO "+jobs+" (handler, payload, status, workflow_id, step_index) VALUES ('h', '{}', ?, ?, 0)", status, wf)
			require.NoError(t, err)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			open[wf] = append(open[wf], id)
		}
	}
	_, err = db.ExecContext(ctx, "ANALYZE TABLE "+jobs)
	require.NoError(t, err)

	// Another transaction holds workflow 2's processing job, as a worker
	// renewing or recording it does.
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer holder.Rollback()
	var held int64
	require.NoError(t, holder.QueryRowContext(ctx, "SELECT id FROM "+jobs+" WHERE id = ? FOR UPDATE", open[2][1]).Scan(&held))

	listCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var got []int64
	err = clientseam.StoreOf(c).InTx(listCtx, func(tx driver.Tx) error {
		rows, err := tx.JobListByWorkflow(listCtx, 1, []driver.JobStatus{driver.JobPending, driver.JobProcessing}, driver.LockUpdate)
		got = got[:0]
		for _, r := range rows {
			got = append(got, r.ID)
		}
		return err
	})
	require.NoError(t, err, "the locked list of workflow 1's open jobs waited for a row of workflow 2")
	assert.Equal(t, open[1], got, "workflow 1's open jobs")
}
