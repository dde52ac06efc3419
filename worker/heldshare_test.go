package worker_test

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// heldStart is a held job's start in one of two workers.
type heldStart struct {
	worker string
	id     int64
}

// heldPair is two workers of one client that hold their claims of the
// handler "held", whose jobs wait at a gate each until the test opens it.
type heldPair struct {
	e       *holdEnv
	started chan heldStart
	mu      sync.Mutex
	gates   map[int64]chan struct{}
	open    bool // every gate opens at once
}

func (p *heldPair) gate(id int64) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gates[id]
	if g == nil {
		g = make(chan struct{})
		if p.open {
			close(g)
		}
		p.gates[id] = g
	}
	return g
}

// openAll opens every gate, now and later.
func (p *heldPair) openAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = true
	for _, g := range p.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
}

// release opens the gates of ids.
func (p *heldPair) release(ids ...int64) {
	for _, id := range ids {
		close(p.gate(id))
	}
}

// worker returns a held worker named name, with bound and concurrency 2.
func (p *heldPair) worker(name string, bound time.Duration, opts ...worker.Option) *worker.Worker {
	w := holdWorker(p.e.c, bound, append([]worker.Option{worker.Concurrency(2)}, opts...)...)
	w.HandleJob("held", func(ctx context.Context, _ queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		p.started <- heldStart{name, info.JobID}
		<-p.gate(info.JobID)
		return nil
	})
	return w
}

func newHeldPair(t *testing.T) *heldPair {
	return &heldPair{e: newHoldEnv(t), started: make(chan heldStart, 64), gates: map[int64]chan struct{}{}}
}

// round receives n starts and returns the job ids by worker.
func (p *heldPair) round(t *testing.T, n int) map[string][]int64 {
	t.Helper()
	got := map[string][]int64{}
	for range n {
		s := receive(t, p.started, "a held job's start")
		got[s.worker] = append(got[s.worker], s.id)
	}
	return got
}

// untilShared runs rounds of four jobs on workers "a" and "b" (started
// by the caller after the first round's jobs are dispatched) until one
// round's jobs of both are held by one transaction, whose connection id
// it returns with that round's jobs, still running, by worker. The next
// round's jobs are dispatched before a round ends, so the workers find
// them when their slots are freed, at the same moment.
func (p *heldPair) untilShared(t *testing.T, start func()) (map[string][]int64, int64) {
	t.Helper()
	p.e.dispatchHeld(t, 4)
	start()
	t.Cleanup(p.openAll)
	for range 10 {
		got := p.round(t, 4)
		if len(got["a"]) > 0 && len(got["b"]) > 0 {
			if h := holderOf(t, p.e, got["a"][0]); h == holderOf(t, p.e, got["b"][0]) {
				return got, h
			}
		}
		p.e.dispatchHeld(t, 4)
		p.release(append(got["a"], got["b"]...)...)
	}
	require.FailNow(t, "no held transaction held the jobs of both workers in 10 rounds")
	return nil, 0
}

// holderOf returns the connection id of the transaction that holds job
// id's row lock: a locking read of the row waits for it, and the lock
// wait names it; the read then times out (and is tried again if it timed
// out before the lock wait was seen).
func holderOf(t *testing.T, e *holdEnv, id int64) int64 {
	t.Helper()
	db, err := sql.Open("mysql", testdb.BaseDSN(t))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var me int64
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&me))
	_, err = conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 3") // the read ends by itself
	require.NoError(t, err)
	// InnoDB refreshes the lock tables of information_schema only when
	// nobody has read them for 100 ms, so they are read less often than
	// that; a read that timed out unseen is tried again.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tx, err := conn.BeginTx(ctx, nil) // a locking read locks in a transaction only
		require.NoError(t, err)
		read := make(chan error, 1)
		go func() {
			var got int64
			read <- tx.QueryRowContext(ctx, "SELECT id FROM "+e.jobs+" WHERE id = ? FOR UPDATE", id).Scan(&got)
		}()
		var holder int64
		for found := false; !found; {
			select {
			case err := <-read:
				require.Error(t, err, "job %d is not locked", id)
				found = true // timed out unseen: again
			case <-time.After(250 * time.Millisecond):
				err := e.admin.QueryRow("SELECT b.trx_mysql_thread_id FROM information_schema.innodb_lock_waits w"+
					" JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id"+
					" JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id WHERE r.trx_mysql_thread_id = ?", me).Scan(&holder)
				if err == nil {
					receive(t, read, "the locking read's timeout")
					require.NoError(t, tx.Rollback())
					return holder
				}
			}
		}
		require.NoError(t, tx.Rollback())
	}
	require.FailNow(t, "no transaction found that holds the job's row lock", "job %d", id)
	return 0
}

// completedOnce asserts that each job of ids is completed, with one
// attempt and one completed log row.
func (e *holdEnv) completedOnce(t *testing.T, ids ...int64) {
	t.Helper()
	e.waitStatus(t, "completed", ids...)
	for _, id := range ids {
		_, a, _ := e.row(t, id)
		assert.Equal(t, 1, a, "job %d: one attempt", id)
		var n int
		require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+e.logs+" WHERE job_id = ? AND event = 'completed'", id).Scan(&n))
		assert.Equal(t, 1, n, "job %d completed once", id)
	}
}

// TestHeldClaimsOfTwoWorkersShareOneTransaction: two workers of one
// client that hold their claims come to hold their jobs in one
// transaction (one connection holds the row locks of both), which writes
// them all when both have returned.
func TestHeldClaimsOfTwoWorkersShareOneTransaction(t *testing.T) {
	p := newHeldPair(t)
	a, b := p.worker("a", 30*time.Second), p.worker("b", 30*time.Second)
	got, _ := p.untilShared(t, func() { runWorker(t, a); runWorker(t, b) })
	ids := append(got["a"], got["b"]...)
	p.release(got["a"]...)
	for _, id := range ids {
		s, att, _ := p.e.row(t, id)
		assert.Equal(t, "pending", s, "held until every share has returned")
		assert.Equal(t, 0, att)
	}
	p.release(got["b"]...)
	p.e.completedOnce(t, ids...)
}

// TestSharedHeldTransactionWhoseConnectionDiesLosesNothing kills the
// connection of a transaction that holds both workers' jobs: every one of
// them reads pending with no attempt counted, and runs again once.
func TestSharedHeldTransactionWhoseConnectionDiesLosesNothing(t *testing.T) {
	ctx := context.Background()
	p := newHeldPair(t)
	a, b := p.worker("a", 30*time.Second), p.worker("b", 30*time.Second)
	var runA, runB *runningWorker
	got, _ := p.untilShared(t, func() { runA, runB = runWorker(t, a), runWorker(t, b) })
	ids := append(got["a"], got["b"]...)
	killHolder(t, p.e, got["b"][0])
	p.e.waitStatus(t, "pending", ids...)
	for _, id := range ids {
		_, att, tok := p.e.row(t, id)
		assert.Equal(t, 0, att, "no attempt counted")
		assert.False(t, tok)
	}
	runA.cancel()
	runB.cancel()
	p.openAll()
	assert.NoError(t, runA.stop(t))
	assert.NoError(t, runB.stop(t))

	other, err := queuety.Open(ctx, p.e.dsn, queuety.WithLogger(quiet()), queuety.SkipMigrate())
	require.NoError(t, err)
	defer other.Close()
	w2 := worker.New(other, worker.NoMaintenance(), worker.PollInterval(10*time.Millisecond), worker.WithLogger(quiet()))
	w2.HandleJob("held", func(context.Context, queuety.Payload) error { return nil })
	runWorker(t, w2)
	p.e.completedOnce(t, ids...)
}

// TestHeldSlotsStayTakenUntilTheSharedWrite: a worker whose held jobs
// have returned claims nothing more while the other share of their
// transaction still runs, since its jobs are not written yet; once the
// transaction is written it claims the next ones.
func TestHeldSlotsStayTakenUntilTheSharedWrite(t *testing.T) {
	p := newHeldPair(t)
	a, b := p.worker("a", 30*time.Second), p.worker("b", 30*time.Second)
	got, _ := p.untilShared(t, func() { runWorker(t, a); runWorker(t, b) })
	more := p.e.dispatchHeld(t, 2)
	p.release(got["a"]...)
	p.release(more...)
	assert.Never(t, func() bool { return len(p.started) > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"a worker claimed before its held jobs were written")
	p.e.waitStatus(t, "pending", got["a"]...)
	p.release(got["b"]...)
	p.round(t, 2)
	p.e.completedOnce(t, append(append(got["a"], got["b"]...), more...)...)
}

// TestStalledHeldSettleIsClaimedPastTheBound: two workers hold their
// first claims in one transaction (their turn waits for both), and one
// worker's settling stalls (its goroutine not run): the transaction does
// not stay open until the server's idle timeout, but half a bound past the
// bound claims the stalled worker's jobs as usual (processing, one
// attempt) and writes the other's completed, all with the transaction's
// claim token; the other worker goes on running jobs meanwhile, and once
// the stalled one resumes its outcomes are recorded the normal way, each
// job completed once.
func TestStalledHeldSettleIsClaimedPastTheBound(t *testing.T) {
	p := newHeldPair(t)
	p.open = true
	stall := make(chan struct{})
	var armed sync.Once
	stalled := make(chan []int64, 1)
	const bound = 200 * time.Millisecond // idle timeout: 1 s
	a := p.worker("a", bound, worker.HeldTogether(2), worker.OnHeldSettle(func(ids []int64) {
		armed.Do(func() {
			stalled <- ids
			<-stall
		})
	}))
	b := p.worker("b", bound, worker.HeldTogether(2))
	first := p.e.dispatchHeld(t, 4)
	runWorker(t, a)
	runWorker(t, b)
	held := receive(t, stalled, "the stalled settling")
	require.Len(t, held, 2, "a's share: its concurrency")
	p.e.waitStatus(t, "processing", held...)
	for _, id := range held {
		_, att, tok := p.e.row(t, id)
		assert.Equal(t, 1, att)
		assert.True(t, tok, "claimed")
	}
	var others []int64
	for _, id := range first {
		if !slices.Contains(held, id) {
			others = append(others, id)
		}
	}
	p.e.completedOnce(t, others...)
	tokens := map[int64]bool{}
	for _, id := range first {
		var tok int64
		require.NoError(t, p.e.admin.QueryRow("SELECT claim_token FROM "+p.e.jobs+" WHERE id = ?", id).Scan(&tok))
		tokens[tok] = true
	}
	assert.Len(t, tokens, 1, "the four jobs' claim tokens: one held transaction wrote them all")
	more := p.e.dispatchHeld(t, 4)
	p.e.completedOnce(t, more...) // run by b while a is stalled
	for _, id := range held {
		s, att, _ := p.e.row(t, id)
		assert.Equal(t, "processing", s, "still a's")
		assert.Equal(t, 1, att)
	}
	close(stall)
	p.e.completedOnce(t, first...)
}
