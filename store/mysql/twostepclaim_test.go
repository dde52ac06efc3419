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

// TestClaimSkipsCandidatesOthersHold: a claim picks its candidates with a
// plain read, which does not see other claims' locks, then locks them by
// id. Candidates another transaction holds are skipped; when it holds all
// of them, the claim scans on past them instead of coming back empty.
func TestClaimSkipsCandidatesOthersHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	reqs := make([]queuety.JobRequest, 10)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "h"}
	}
	ids, err := c.DispatchMany(ctx, reqs)
	require.NoError(t, err)
	require.Len(t, ids, 10)
	db := c.DB() // other connections of the pool: other transactions

	claim := func(limit int) []int64 {
		t.Helper()
		var got []int64
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			got = got[:0]
			jobs, err := tx.JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{"h"}, Limit: limit,
				Now: time.Now().Add(time.Second), Token: 256})
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			return err
		}))
		return got
	}
	hold := func(ids ...int64) func() {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		for _, id := range ids {
			var got int64
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT id FROM "+prefix+"queuety_jobs WHERE id = ? FOR UPDATE", id).Scan(&got))
		}
		return func() { require.NoError(t, tx.Rollback()) }
	}

	release := hold(ids[0], ids[1])
	assert.Equal(t, ids[2:5], claim(5), "the candidates nobody holds")
	release()

	// The first three pending rows now: 1, 2 and 6.
	release = hold(ids[0], ids[1], ids[5])
	assert.Equal(t, ids[6:9], claim(3), "all candidates held: the rows after them")
	release()

	assert.Equal(t, []int64{ids[0], ids[1], ids[5], ids[9]}, claim(5), "the rows released, and all that is left")
}
