package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// TestProcessingJobsByIDOnFreshTable: on a jobs table the server has no
// statistics of (a new install, a new prefix), with a backlog of 20,000
// pending jobs and 400 processing ones, the completion of 10 claimed
// jobs, the renewal of 16 leases and the unclaim of 10 jobs each read
// about as many index entries and rows as they change. With the status
// written as status = 'processing', which implies the predicate of the
// partial idx_reserved, the planner read every processing job of that
// index beside the primary key's entries, or instead of them.
func TestProcessingJobsByIDOnFreshTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	db := sq.SQLDB()
	// No statistics for the whole test, whenever autovacuum would come.
	_, err = db.ExecContext(ctx, "ALTER TABLE queuety_jobs SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	const backlog, processing = 20000, 400
	for start := 0; start < backlog+processing; start += 1000 {
		reqs := make([]queuety.JobRequest, min(1000, backlog+processing-start))
		for i := range reqs {
			reqs[i] = queuety.JobRequest{Handler: "h"}
		}
		_, err := q.DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}
	var analyzed sql.NullTime
	require.NoError(t, db.QueryRowContext(ctx, "SELECT GREATEST(last_analyze, last_autoanalyze) FROM pg_stat_user_tables WHERE relid = 'queuety_jobs'::regclass").Scan(&analyzed))
	require.False(t, analyzed.Valid, "the jobs table has no statistics")

	now := time.Now().Add(time.Second)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	claimed, err := sq.WrapTx(tx).JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{"h"}, Limit: processing, Now: now, Token: 256})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Len(t, claimed, processing)
	ids := make([]int64, len(claimed))
	for i, j := range claimed {
		ids[i] = j.ID
	}

	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	w := sq.WrapTx(tx)
	// What this transaction read so far, table and indexes of the jobs
	// table together: rows a sequential scan returned plus entries index
	// scans returned.
	read := func() int64 {
		var n int64
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_tuples_returned('queuety_jobs'::regclass) +
			COALESCE((SELECT SUM(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index WHERE indrelid = 'queuety_jobs'::regclass), 0)`).Scan(&n))
		return n
	}

	before := read()
	done, err := w.JobCompleteClaimed(ctx, ids[:10], claimed[0].ClaimToken, claimed[0].Attempts, now)
	require.NoError(t, err)
	assert.EqualValues(t, 10, done)
	assert.Less(t, read()-before, int64(60), "rows and index entries read to complete 10 of %d processing jobs", processing)

	before = read()
	renewed, err := w.JobTouch(ctx, ids[10:26], claimed[0].ClaimToken, now)
	require.NoError(t, err)
	assert.EqualValues(t, 16, renewed)
	assert.Less(t, read()-before, int64(60), "rows and index entries read to renew 16 of %d leases", processing)

	before = read()
	require.NoError(t, w.JobUnclaim(ctx, ids[26:36]))
	assert.Less(t, read()-before, int64(60), "rows and index entries read to unclaim 10 of %d processing jobs", processing)
	got, err := w.JobGetMany(ctx, ids[:36], driver.LockNone)
	require.NoError(t, err)
	require.Len(t, got, 36)
	for _, j := range got {
		want := driver.JobProcessing
		switch {
		case j.ID <= ids[9]:
			want = driver.JobCompleted
		case j.ID >= ids[26]:
			want = driver.JobPending
		}
		assert.Equal(t, want, j.Status, "job %d", j.ID)
	}
}
