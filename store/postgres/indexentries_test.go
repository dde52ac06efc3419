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

// TestDrainedJobWritesFewIndexEntries: a plain job's insert, claim and
// completion and its two log rows (started, completed) add 18 index
// entries: 5 at the insert (the primary key, idx_go_due, idx_go_claim,
// idx_go_claim_handler, idx_handler_status), 3 at the claim (the primary key,
// idx_handler_status, idx_reserved), 2 at the completion (the primary key,
// idx_status_completed) and 4 per log row (the primary key, idx_job,
// idx_created, idx_go_handler_event). Schema version 3 wrote 24, version
// 4 17 (version 5 adds the claim's index by handler).
//
// The claim and the completion change the status, which the partial
// indexes' predicates name, so neither is a heap-only update (the
// transaction's counters check it) and each version of a row gets an
// entry in every index whose predicate it meets: the test counts, after
// each write, the indexes whose predicate each row meets.
func TestDrainedJobWritesFewIndexEntries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	const n = 20
	reqs := make([]queuety.JobRequest, n)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "h"}
	}
	ids, err := q.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	require.Len(t, ids, n)

	tx, err := sq.SQLDB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	jobIDs := ids
	inserted := indexEntries(t, tx, "queuety_jobs", "id", jobIDs)

	w := sq.WrapTx(tx)
	now := time.Now().Add(time.Second)
	claimed, err := w.JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{"h"}, Limit: n, Now: now, Token: 256})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	claim := indexEntries(t, tx, "queuety_jobs", "id", jobIDs)

	done, err := w.JobCompleteClaimed(ctx, jobIDs, claimed[0].ClaimToken, claimed[0].Attempts, now)
	require.NoError(t, err)
	require.EqualValues(t, n, done)
	completion := indexEntries(t, tx, "queuety_jobs", "id", jobIDs)

	var logs []*driver.LogEntry
	for _, j := range claimed {
		for _, ev := range []driver.LogEvent{driver.LogStarted, driver.LogCompleted} {
			id, attempt := j.ID, j.Attempts
			logs = append(logs, &driver.LogEntry{JobID: &id, Handler: j.Handler, Queue: j.Queue, Event: ev, Attempt: &attempt, CreatedAt: now})
		}
	}
	require.NoError(t, w.LogInsert(ctx, logs))
	logged := indexEntries(t, tx, "queuety_logs", "job_id", jobIDs)

	var upd, hot int
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT pg_stat_get_xact_tuples_updated('queuety_jobs'::regclass), "+
		"pg_stat_get_xact_tuples_hot_updated('queuety_jobs'::regclass)").Scan(&upd, &hot))
	assert.Equal(t, 2*n, upd, "the claim and the completion update each job")
	assert.Zero(t, hot, "neither is a heap-only update")

	assert.Equal(t, 5*n, inserted, "index entries of the jobs' inserts")
	assert.Equal(t, 3*n, claim, "index entries of their claims")
	assert.Equal(t, 2*n, completion, "index entries of their completions")
	assert.Equal(t, 8*n, logged, "index entries of their log rows")
	assert.Equal(t, 18*n, inserted+claim+completion+logged, "index entries of %d drained jobs", n)
}

// indexEntries counts, over the rows of table whose col is in ids (their
// current versions), the indexes of table whose predicate each row meets:
// the entries the rows' last write added.
func indexEntries(t *testing.T, tx *sql.Tx, table, col string, ids []int64) int {
	t.Helper()
	ctx := context.Background()
	rows, err := tx.QueryContext(ctx, "SELECT COALESCE(pg_get_expr(indpred, indrelid), 'true') FROM pg_index WHERE indrelid = ?::regclass", table)
	require.NoError(t, err)
	var preds []string
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		preds = append(preds, p)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	total := 0
	for _, p := range preds {
		var c int
		require.NoError(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+col+" = ANY(?) AND ("+p+")", ids).Scan(&c), p)
		total += c
	}
	return total
}
