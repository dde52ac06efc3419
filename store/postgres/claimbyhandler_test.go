package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// byHandlerSetup dispatches reqs in chunks of 1,000 and returns the ids.
func byHandlerDispatch(t *testing.T, ctx context.Context, q *queuety.Client, reqs []queuety.JobRequest) []int64 {
	t.Helper()
	var ids []int64
	for start := 0; start < len(reqs); start += 1000 {
		got, err := q.DispatchMany(ctx, reqs[start:min(start+1000, len(reqs))])
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	return ids
}

// TestClaimPassesOtherHandlersBacklog: behind 5,000 pending jobs of a
// handler the claim does not name, ahead in claim order on the same
// queue, a claim of 100 jobs for 8 handlers (a worker's handler and the
// engine's own) reads about as many index entries and rows as it claims,
// on a table without statistics, and claims them in claim order. A claim
// that read the queue's pending jobs in claim order (idx_go_claim) read
// the 5,000 entries and their rows first, on every claim.
func TestClaimPassesOtherHandlersBacklog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	var reqs []queuety.JobRequest
	for range 5000 {
		reqs = append(reqs, queuety.JobRequest{Handler: "other"})
	}
	byHandlerDispatch(t, ctx, q, reqs)
	reqs = reqs[:0]
	for i := range 300 {
		r := queuety.JobRequest{Handler: "h"}
		switch i {
		case 250:
			r.Options = []queuety.JobOption{queuety.WithPriority(3)} // claimed first
		case 260:
			r.Options = []queuety.JobOption{queuety.Delay(time.Hour)} // not due
		case 270:
			r.Options = []queuety.JobOption{queuety.OnQueue("elsewhere")}
		}
		reqs = append(reqs, r)
	}
	ids := byHandlerDispatch(t, ctx, q, reqs)

	tx, err := sq.SQLDB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	handlers := []string{"h"}
	for i := range 7 {
		handlers = append(handlers, fmt.Sprintf("engine-%d", i))
	}
	before := jobsRead(t, ctx, tx)
	jobs, err := sq.WrapTx(tx).JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: handlers, Limit: 100, Now: time.Now().Add(time.Second), Token: 256})
	require.NoError(t, err)
	took := jobsRead(t, ctx, tx) - before
	require.Len(t, jobs, 100)
	assert.Equal(t, ids[250], jobs[0].ID, "the claim's order: priority first")
	for i, j := range jobs[1:] {
		assert.Equal(t, "h", j.Handler)
		assert.Equal(t, ids[i], j.ID, "the claim's order: then by id")
		assert.Equal(t, driver.JobProcessing, j.Status)
		assert.Equal(t, int64(257), j.ClaimToken)
	}
	assert.Less(t, took, int64(400), "rows and index entries read to claim 100 jobs behind 5,000 of another handler")
}

// TestClaimByHandlerKeepsClaimOrder: a claim of several handlers takes
// the first due jobs of them all in claim order (priority, due time, id),
// whichever handler they have; jobs another transaction holds are
// skipped, a handler whose first jobs wait for a dependency gives its
// next ones, and a claim of more handlers than it reads one by one (33)
// claims in the same order.
func TestClaimByHandlerKeepsClaimOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, sq := clientAndStore(ctx, t)
	var err error
	// a0 b0 a1 b1 ... with b's odd jobs at priority 1.
	var reqs []queuety.JobRequest
	for i := range 40 {
		h := "a"
		if i%2 == 1 {
			h = "b"
		}
		r := queuety.JobRequest{Handler: h}
		if h == "b" && i%4 == 3 {
			r.Options = []queuety.JobOption{queuety.WithPriority(1)}
		}
		reqs = append(reqs, r)
	}
	ids := byHandlerDispatch(t, ctx, q, reqs)
	// c's first 3 jobs wait for a pending job of a handler no claim
	// names; its fourth is free.
	blocker := byHandlerDispatch(t, ctx, q, []queuety.JobRequest{{Handler: "nobody"}})[0]
	var creqs []queuety.JobRequest
	for range 3 {
		creqs = append(creqs, queuety.JobRequest{Handler: "c", Options: []queuety.JobOption{queuety.DependsOn(blocker)}})
	}
	creqs = append(creqs, queuety.JobRequest{Handler: "c", Options: []queuety.JobOption{queuety.WithPriority(2)}})
	cids := byHandlerDispatch(t, ctx, q, creqs)

	// want: c's free job (priority 2), b's priority-1 jobs, then the rest by id.
	want := []int64{cids[3]}
	for i := range ids {
		if i%4 == 3 {
			want = append(want, ids[i])
		}
	}
	for i := range ids {
		if i%4 != 3 {
			want = append(want, ids[i])
		}
	}

	db := sq.SQLDB()
	// Another transaction holds b's first priority-1 job and a's first job.
	hold, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer hold.Rollback()
	_, err = hold.ExecContext(ctx, "SELECT id FROM queuety_jobs WHERE id IN (?, ?) FOR UPDATE", ids[3], ids[0])
	require.NoError(t, err)
	held := map[int64]bool{ids[3]: true, ids[0]: true}
	var wantFree []int64
	for _, id := range want {
		if !held[id] {
			wantFree = append(wantFree, id)
		}
	}

	for _, handlers := range [][]string{{"a", "b", "c"}, append([]string{"a", "b", "c"}, manyHandlers(30)...)} {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		jobs, err := sq.WrapTx(tx).JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: handlers, Limit: 15, Now: time.Now().Add(time.Second), Token: 256})
		require.NoError(t, err)
		got := make([]int64, len(jobs))
		for i, j := range jobs {
			got[i] = j.ID
		}
		assert.Equal(t, wantFree[:15], got, "%d handlers", len(handlers))
		require.NoError(t, tx.Rollback())
	}
}

func manyHandlers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("x%d", i)
	}
	return out
}
