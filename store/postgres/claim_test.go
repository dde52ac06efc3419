package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// jobsRead is what tx read so far of the jobs table, table and indexes
// together: rows sequential scans returned plus entries index scans
// returned.
func jobsRead(t *testing.T, ctx context.Context, tx *sql.Tx) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_tuples_returned('queuety_jobs'::regclass) +
		COALESCE((SELECT SUM(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index WHERE indrelid = 'queuety_jobs'::regclass), 0)`).Scan(&n))
	return n
}

// TestClaimReadsOnlyWhatItClaims: a claim of 10 jobs out of a backlog of
// 3,000 reads about as many index entries and rows as it claims, in
// claim order. The claim's UPDATE finds its rows by the ids its locking
// read picked; an UPDATE whose condition repeats status = 'pending' can be
// planned as a scan of every pending job in the partial claim index (a
// fresh table's statistics say it is small), which made a claim's cost
// grow with the backlog.
func TestClaimReadsOnlyWhatItClaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	const backlog = 3000
	for start := 0; start < backlog; start += 1000 {
		reqs := make([]queuety.JobRequest, 1000)
		for i := range reqs {
			reqs[i] = queuety.JobRequest{Handler: "h"}
			if start == 1000 && i == 0 {
				reqs[i].Options = []queuety.JobOption{queuety.WithPriority(3)} // claimed first
			}
		}
		_, err := q.DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}

	tx, err := sq.SQLDB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	before := jobsRead(t, ctx, tx)
	jobs, err := sq.WrapTx(tx).JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{"h"}, Limit: 10, Now: time.Now().Add(time.Second), Token: 256})
	require.NoError(t, err)
	took := jobsRead(t, ctx, tx) - before
	require.Len(t, jobs, 10)
	assert.EqualValues(t, 3, jobs[0].Priority, "the claim's order: priority first")
	for i, j := range jobs {
		assert.Equal(t, driver.JobProcessing, j.Status)
		assert.Equal(t, 1, j.Attempts)
		assert.Equal(t, int64(257), j.ClaimToken)
		if i > 1 {
			assert.Less(t, jobs[i-1].ID, j.ID, "the claim's order: then by id")
		}
	}
	assert.Less(t, took, int64(100), "rows and index entries read to claim 10 of %d jobs", backlog)
}

// TestClaimKeepsCustomPlans: on a queue where one handler has a backlog
// of 60,000 due jobs, another 20,000 and a third 5, beside delayed jobs
// and other queues, after a dozen claims of the second handler on one
// connection, with statistics of the table, the claim of the third still
// reads about as many index entries and rows as it claims, each of 8
// times, and the server planned no claim without its values. Kept
// prepared, with the server's plan_cache_mode left at auto, the claim
// went over to its generic plan after five claims, which read the
// queue's claim index through the big backlog (79,410 entries and rows
// to claim 5). The idle read of the next due job (JobNextDue), which has
// the claim's conditions, is planned with its values as well.
func TestClaimKeepsCustomPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	dispatch := func(handler string, n int, opts ...func(i int) queuety.JobOption) {
		for start := 0; start < n; start += 1000 {
			reqs := make([]queuety.JobRequest, min(1000, n-start))
			for i := range reqs {
				reqs[i] = queuety.JobRequest{Handler: handler}
				for _, o := range opts {
					reqs[i].Options = append(reqs[i].Options, o(start+i))
				}
			}
			_, err := q.DispatchMany(ctx, reqs)
			require.NoError(t, err)
		}
	}
	const rare = 5
	dispatch("big", 60000)
	dispatch("h", 20000)
	dispatch("rare", rare)
	dispatch("h", 20000, func(int) queuety.JobOption { return queuety.Delay(time.Hour) })
	dispatch("h", 10000, func(i int) queuety.JobOption { return queuety.OnQueue(fmt.Sprintf("q%d", i%40)) })

	db := sq.SQLDB()
	db.SetMaxOpenConns(1) // every claim on the connection whose statements are read below
	_, err = db.ExecContext(ctx, "ANALYZE queuety_jobs")
	require.NoError(t, err)
	claim := func(handler string, limit int, commit bool) (int, int64) {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		before := jobsRead(t, ctx, tx)
		jobs, err := sq.WrapTx(tx).JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{handler}, Limit: limit, Now: time.Now().Add(time.Second), Token: 256})
		require.NoError(t, err)
		took := jobsRead(t, ctx, tx) - before
		if commit {
			require.NoError(t, tx.Commit())
		}
		return len(jobs), took
	}
	for range 12 {
		n, _ := claim("h", 50, true)
		require.Equal(t, 50, n)
	}
	// Rolled back, each claim of the rare handler finds its 5 jobs again.
	var took int64
	for range 8 {
		n, _ := claim("h", 50, false)
		require.Equal(t, 50, n)
		n, read := claim("rare", 50, false)
		require.Equal(t, rare, n)
		took = max(took, read)
	}
	// No claim statement prepared on the connection was planned without
	// its values.
	var generic int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COALESCE(SUM(generic_plans), 0) FROM pg_prepared_statements
		WHERE statement LIKE '%SKIP LOCKED%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic))
	assert.Zero(t, generic, "claims planned without their values")
	assert.Less(t, took, int64(100), "rows and index entries read to claim %d jobs beside a backlog of 60,000", rare)

	// The idle read of the next due job has the claim's conditions: it is
	// planned with its values too.
	idle, ok := sq.(driver.IdleReader)
	require.True(t, ok)
	for range 8 {
		for _, h := range []string{"h", "rare"} {
			at, found, err := idle.JobNextDue(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{h}})
			require.NoError(t, err)
			require.True(t, found, "a due job of %s", h)
			require.False(t, at.IsZero())
		}
	}
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COALESCE(SUM(generic_plans), 0) FROM pg_prepared_statements
		WHERE statement LIKE '%ORDER BY job.available_at LIMIT 1%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic))
	assert.Zero(t, generic, "next-due reads planned without their values")
}
