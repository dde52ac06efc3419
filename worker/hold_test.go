package worker_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// holdEnv is a migrated table set with a client and an admin handle.
type holdEnv struct {
	c          *queuety.Client
	dsn        string
	admin      *sql.DB
	jobs, logs string
}

// dispatchHeld dispatches n jobs of the handler "held" and returns their ids.
func (e *holdEnv) dispatchHeld(t *testing.T, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		id, err := e.c.Dispatch(context.Background(), "held", nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func newHoldEnv(t *testing.T) *holdEnv {
	t.Helper()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(context.Background(), dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	admin, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	return &holdEnv{c: c, dsn: dsn, admin: admin, jobs: prefix + "queuety_jobs", logs: prefix + "queuety_logs"}
}

// row reads a job's status, attempts and whether it has a claim token.
func (e *holdEnv) row(t *testing.T, id int64) (status string, attempts int, token bool) {
	t.Helper()
	var tok sql.NullInt64
	require.NoError(t, e.admin.QueryRow("SELECT status, attempts, claim_token FROM "+e.jobs+" WHERE id = ?", id).Scan(&status, &attempts, &tok))
	return status, attempts, tok.Valid
}

// waitStatus waits until every job of ids reads status (10 s at most).
func (e *holdEnv) waitStatus(t *testing.T, status string, ids ...int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if s, _, _ := e.row(t, id); s != status {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "jobs %v become %s", ids, status)
}

// dump reads the jobs and log rows as text, with ids, times and tokens
// replaced by what they are (set or NULL; a token by whether it names the
// attempt), jobs in id order and each job's log rows in event order.
func (e *holdEnv) dump(t *testing.T) []string {
	t.Helper()
	masked := map[string]bool{"id": true, "job_id": true, "created_at": true, "available_at": true, "reserved_at": true,
		"completed_at": true, "failed_at": true, "duration_ms": true, "payload_hash": true}
	read := func(q string) []string {
		rows, err := e.admin.Query(q)
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			var b strings.Builder
			for i, c := range cols {
				v := vals[i].String
				switch {
				case !vals[i].Valid:
					v = "NULL"
				case masked[c]:
					v = "set"
				}
				fmt.Fprintf(&b, "%s=%s ", c, v)
			}
			out = append(out, b.String())
		}
		require.NoError(t, rows.Err())
		return out
	}
	out := read("SELECT *, claim_token % 256 = attempts AS token_names_attempt, claim_token IS NOT NULL AS has_token FROM " + e.jobs + " ORDER BY id")
	for i := range out {
		out[i] = maskCol(out[i], "claim_token")
	}
	logs := read("SELECT l.*, j.payload FROM " + e.logs + " l JOIN " + e.jobs + " j ON j.id = l.job_id ORDER BY l.job_id, l.id")
	sort.Strings(logs)
	return append(out, logs...)
}

// maskCol replaces column c's value in a dumped row.
func maskCol(row, c string) string {
	parts := strings.Split(row, " ")
	for i, p := range parts {
		if strings.HasPrefix(p, c+"=") && p != c+"=NULL" {
			parts[i] = c + "=set"
		}
	}
	return strings.Join(parts, " ")
}

// holdWorker is a worker that holds its claims.
func holdWorker(c *queuety.Client, bound time.Duration, opts ...worker.Option) *worker.Worker {
	return worker.New(c, append([]worker.Option{worker.NoMaintenance(), worker.PollInterval(10 * time.Millisecond),
		worker.WithLogger(quiet()), worker.HoldClaims(bound)}, opts...)...)
}

// TestHeldJobsWriteTheRowsOfTheNormalPath runs the same jobs with and
// without held claims and compares every column of their job and log
// rows (ids, times and the random claim token aside). Each handler of the
// held run reads its own row pending: the claim was held.
func TestHeldJobsWriteTheRowsOfTheNormalPath(t *testing.T) {
	ctx := context.Background()
	const n = 12
	run := func(hold bool) []string {
		e := newHoldEnv(t)
		var ids []int64
		for i := range n {
			id, err := e.c.Dispatch(ctx, "plain", queuety.State{"i": i})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		seen := make(chan string, n)
		opts := []worker.Option{worker.Concurrency(4)}
		var w *worker.Worker
		if hold {
			w = holdWorker(e.c, 5*time.Second, opts...)
		} else {
			w = worker.New(e.c, append(opts, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))...)
		}
		w.HandleJob("plain", func(ctx context.Context, _ queuety.Payload) error {
			info, _ := queuety.JobInfoFrom(ctx)
			s, _, _ := e.row(t, info.JobID)
			seen <- s
			return nil
		})
		runWorker(t, w)
		e.waitStatus(t, "completed", ids...)
		want := "processing"
		if hold {
			want = "pending"
		}
		for range n {
			assert.Equal(t, want, receive(t, seen, "a handler's read of its row"))
		}
		return e.dump(t)
	}
	normal, held := run(false), run(true)
	require.Len(t, held, 3*n, "one job row and two log rows a job")
	assert.Equal(t, normal, held)
}

// TestHeldRowsAreSkippedByOtherClaims: while a held batch runs, its rows
// read pending with no attempt counted, and another worker's claims take
// none of them.
func TestHeldRowsAreSkippedByOtherClaims(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	const n = 3
	ids := e.dispatchHeld(t, n)
	started := make(chan int64, n)
	release := make(chan struct{})
	w := holdWorker(e.c, 30*time.Second, worker.Concurrency(n))
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		started <- info.JobID
		<-release
		return nil
	})
	runWorker(t, w)
	for range n {
		receive(t, started, "a held job's start")
	}
	for _, id := range ids {
		s, a, tok := e.row(t, id)
		assert.Equal(t, "pending", s)
		assert.Equal(t, 0, a)
		assert.False(t, tok)
	}
	other, err := queuety.Open(ctx, e.dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
	require.NoError(t, err)
	defer other.Close()
	w2 := worker.New(other, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))
	w2.HandleJob("held", func(context.Context, queuety.Payload) error { return errors.New("ran a held job") })
	st, err := w2.RunOnce(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, st.Claimed, "the other worker claimed held rows")
	close(release)
	e.waitStatus(t, "completed", ids...)
	for _, id := range ids {
		_, a, _ := e.row(t, id)
		assert.Equal(t, 1, a)
	}
}

// TestHeldHandlerPastTheBoundIsConverted: a handler still running at the
// bound has its job claimed the normal way (processing, one attempt, a
// claim token) and then completes through the normal completion.
func TestHeldHandlerPastTheBoundIsConverted(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	id, err := e.c.Dispatch(ctx, "slow", nil)
	require.NoError(t, err)
	quick, err := e.c.Dispatch(ctx, "quick", nil)
	require.NoError(t, err)
	started := make(chan string, 1)
	release := make(chan struct{})
	w := holdWorker(e.c, 50*time.Millisecond, worker.Concurrency(2))
	w.HandleJob("slow", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		s, _, _ := e.row(t, info.JobID)
		started <- s
		<-release
		return nil
	})
	w.HandleJob("quick", func(context.Context, queuety.Payload) error { return nil })
	runWorker(t, w)
	assert.Equal(t, "pending", receive(t, started, "the slow job's start"), "held at first")
	e.waitStatus(t, "processing", id)
	s, a, tok := e.row(t, id)
	assert.Equal(t, "processing", s)
	assert.Equal(t, 1, a)
	assert.True(t, tok, "a claim token")
	e.waitStatus(t, "completed", quick)
	close(release)
	e.waitStatus(t, "completed", id)
	_, a, _ = e.row(t, id)
	assert.Equal(t, 1, a)
	var logs int
	require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+e.logs+" WHERE job_id = ? AND event IN ('started', 'completed')", id).Scan(&logs))
	assert.Equal(t, 2, logs)
}

// TestHeldBatchWhoseConnectionDiesLosesNothing kills the held
// connection from an admin connection: the jobs read pending with no
// attempt counted, and another worker then runs each of them once.
func TestHeldBatchWhoseConnectionDiesLosesNothing(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	const n = 3
	ids := e.dispatchHeld(t, n)
	started := make(chan int64, n)
	release := make(chan struct{})
	var mu sync.Mutex
	ranFirst := map[int64]bool{}
	w := holdWorker(e.c, 30*time.Second, worker.Concurrency(n))
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		first := !ranFirst[info.JobID]
		ranFirst[info.JobID] = true
		mu.Unlock()
		if first {
			started <- info.JobID
			<-release
		}
		return nil
	})
	run := runWorker(t, w)
	for range n {
		receive(t, started, "a held job's start")
	}
	killHolder(t, e, ids[0])
	e.waitStatus(t, "pending", ids...)
	for _, id := range ids {
		_, a, tok := e.row(t, id)
		assert.Equal(t, 0, a, "no attempt counted")
		assert.False(t, tok)
	}
	close(release)
	run.cancel()
	receive(t, run.done, "the held worker's return")
	require.NoError(t, run.err)

	other, err := queuety.Open(ctx, e.dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
	require.NoError(t, err)
	defer other.Close()
	w2 := worker.New(other, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))
	w2.HandleJob("held", func(context.Context, queuety.Payload) error { return nil })
	runWorker(t, w2)
	e.waitStatus(t, "completed", ids...)
	for _, id := range ids {
		var completed int
		require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+e.logs+" WHERE job_id = ? AND event = 'completed'", id).Scan(&completed))
		assert.Equal(t, 1, completed, "job %d completed once", id)
	}
}

// killHolder kills the connection whose transaction holds job id's row
// lock: a locking read of the row waits for it, and the lock wait names
// the transaction it waits for. InnoDB refreshes the information_schema
// lock tables only when nobody has read them for 100 ms, so the poll
// waits longer than that between reads (at 5 ms it kept reading the same
// stale snapshot when several test processes ran at once).
func killHolder(t *testing.T, e *holdEnv, id int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := e.admin.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var me int64
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&me))
	tx, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	locked := make(chan error, 1)
	go func() {
		var got int64
		locked <- tx.QueryRowContext(ctx, "SELECT id FROM "+e.jobs+" WHERE id = ? FOR UPDATE", id).Scan(&got)
	}()
	var holder int64
	require.Eventually(t, func() bool {
		err := e.admin.QueryRow("SELECT b.trx_mysql_thread_id FROM information_schema.innodb_lock_waits w"+
			" JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id"+
			" JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id WHERE r.trx_mysql_thread_id = ?", me).Scan(&holder)
		return err == nil
	}, 15*time.Second, 250*time.Millisecond, "the locking read waits for the held transaction")
	_, err = e.admin.Exec(fmt.Sprintf("KILL %d", holder))
	require.NoError(t, err)
	require.NoError(t, receive(t, locked, "the row lock, once the holder is gone"))
}

// TestHeldFailuresTakeTheNormalFailurePath: a handler's error and its
// panic count an attempt and retry or bury the job as a claimed job's do.
func TestHeldFailuresTakeTheNormalFailurePath(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	retried, err := e.c.Dispatch(ctx, "fails", nil, queuety.MaxAttempts(3))
	require.NoError(t, err)
	buried, err := e.c.Dispatch(ctx, "panics", nil, queuety.MaxAttempts(1))
	require.NoError(t, err)
	seen := make(chan string, 2)
	finished := make(chan int64, 4)
	w := holdWorker(e.c, 5*time.Second, worker.Concurrency(2),
		worker.WithHooks(worker.Hooks{Finished: func(j *driver.Job, _ error) { finished <- j.ID }}))
	w.HandleJob("fails", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		s, _, _ := e.row(t, info.JobID)
		seen <- s
		return errors.New("boom")
	})
	w.HandleJob("panics", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		s, _, _ := e.row(t, info.JobID)
		seen <- s
		panic("kaboom")
	})
	runWorker(t, w)
	assert.Equal(t, "pending", receive(t, seen, "a handler's read"), "held")
	assert.Equal(t, "pending", receive(t, seen, "a handler's read"), "held")
	got := map[int64]bool{receive(t, finished, "an outcome"): true, receive(t, finished, "an outcome"): true}
	require.Equal(t, map[int64]bool{retried: true, buried: true}, got)
	s, a, _ := e.row(t, retried)
	assert.Equal(t, "pending", s, "retried")
	assert.Equal(t, 1, a)
	s, a, _ = e.row(t, buried)
	assert.Equal(t, "buried", s)
	assert.Equal(t, 1, a)
	var failedLogs int
	require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+e.logs+" WHERE job_id IN (?, ?) AND event IN ('failed', 'buried')", retried, buried).Scan(&failedLogs))
	assert.Equal(t, 2, failedLogs)
}

// TestIneligibleJobsAreClaimedAsUsual: a job of a concurrency group and a
// workflow step are claimed the normal way by a worker that holds claims,
// and a plain job beside them is held.
func TestIneligibleJobsAreClaimedAsUsual(t *testing.T) {
	ctx := context.Background()
	e := newHoldEnv(t)
	grouped, err := e.c.Dispatch(ctx, "grouped", nil, queuety.ConcurrencyGroup("g"), queuety.ConcurrencyLimit(5))
	require.NoError(t, err)
	plain, err := e.c.Dispatch(ctx, "plain", nil)
	require.NoError(t, err)
	_, err = builder.Workflow("wf").Then("step").Dispatch(ctx, e.c, nil)
	require.NoError(t, err)
	seen := make(chan string, 3)
	w := holdWorker(e.c, 5*time.Second, worker.Concurrency(3))
	handler := func(kind string) queuety.JobFunc {
		return func(ctx context.Context, _ queuety.Payload) error {
			info, _ := queuety.JobInfoFrom(ctx)
			s, _, _ := e.row(t, info.JobID)
			seen <- kind + " " + s
			return nil
		}
	}
	w.HandleJob("grouped", handler("grouped"))
	w.HandleJob("plain", handler("plain"))
	w.HandleStep("step", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		info, _ := queuety.JobInfoFrom(ctx)
		s, _, _ := e.row(t, info.JobID)
		seen <- "step " + s
		return nil, nil
	})
	runWorker(t, w)
	got := []string{receive(t, seen, "a handler's read"), receive(t, seen, "a handler's read"), receive(t, seen, "a handler's read")}
	sort.Strings(got)
	assert.Equal(t, []string{"grouped processing", "plain pending", "step processing"}, got)
	e.waitStatus(t, "completed", grouped, plain)
}
