package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/txcount"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
)

// countingStore is a real store whose transactions count their
// dependents reads (txcount).
type countingStore struct {
	driver.Store
	reads *txcount.Reads
}

func (s countingStore) InTx(ctx context.Context, fn func(tx driver.Tx) error) error {
	return s.Store.InTx(ctx, s.reads.Wrap(fn))
}

// fakeDepClock is a clock for a depGate that moves only when told.
type fakeDepClock struct{ at atomic.Int64 }

// newFakeDepClock makes g tell the time by a new fakeDepClock.
func newFakeDepClock(g *depGate) *fakeDepClock {
	c := &fakeDepClock{}
	c.at.Store(1) // depClock is never 0
	g.now = c.at.Load
	return c
}

// advance moves the clock on by d.
func (c *fakeDepClock) advance(d time.Duration) { c.at.Add(int64(d)) }

// elapsed returns how far the clock moved.
func (c *fakeDepClock) elapsed() time.Duration { return time.Duration(c.at.Load() - 1) }

// sqliteStore opens and migrates an SQLite store in a file of the test's
// own.
func sqliteStore(t *testing.T) driver.Store {
	t.Helper()
	ctx := context.Background()
	s, err := driver.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Migrate(ctx))
	return s
}

// depEngine returns an engine (with a gate of its own) on s, whose
// transactions count their dependents reads in the returned depReads,
// and the gate's fake clock.
func depEngine(s driver.Store) (*Engine, *txcount.Reads, *fakeDepClock) {
	reads := &txcount.Reads{}
	e := New(countingStore{Store: s, reads: reads}, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return e, reads, newFakeDepClock(e.deps)
}

// depJob returns a new job of queue q and handler h that depends on
// dependsOn (0: none), with status, due a minute ago (whatever the
// store's precision).
func depJob(q, h string, dependsOn int64, status driver.JobStatus) *driver.Job {
	now := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	return &driver.Job{Queue: q, Handler: h, Payload: []byte(`{}`), Status: status, MaxAttempts: 3,
		AvailableAt: now, CreatedAt: now, CostUnits: 1, DependsOn: dependsOn}
}

// insertJobs inserts jobs into s in one transaction run with ctx, and
// returns their ids.
func insertJobs(t *testing.T, ctx context.Context, s driver.Store, jobs ...*driver.Job) []int64 {
	t.Helper()
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error { return tx.JobInsert(ctx, jobs) }))
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// TestCompletionReadsDependentsOnlyWhenTheyMayExist: a completion of jobs
// newer than every dependency reads the highest depends_on about once a
// second and looks up no dependents; a completion of a job at or below it
// looks up the dependents of those jobs only, and notes the pending ones
// as claimable. The horizon is read again early once another process
// committed jobs, and raised without a read by a dependent job inserted or
// claimed in this process.
func TestCompletionReadsDependentsOnlyWhenTheyMayExist(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	e, reads, clock := depEngine(s)
	insert := func(jobs ...*driver.Job) []int64 {
		t.Helper()
		return insertJobs(t, ctx, s, jobs...) // as another process would: the engine hears nothing
	}
	plain := func(h string) *driver.Job { return depJob("q", h, 0, driver.JobPending) }
	// complete completes the jobs of ids in a transaction of e's store
	// run with the engine's job note, and returns the jobs it noted as
	// claimable.
	complete := func(ids ...int64) map[jobnote.Key]int {
		t.Helper()
		ctx, n := e.newNote(ctx)
		require.NoError(t, e.store.InTx(ctx, func(tx driver.Tx) error {
			return tx.JobComplete(ctx, ids, time.Now().UTC())
		}))
		counts, _ := n.Take()
		return counts
	}

	first := insert(plain("first"))[0]
	insert(depJob("q", "then", first, driver.JobPending), depJob("q", "done", first, driver.JobCompleted))
	p := insert(plain("p"), plain("p"), plain("p"), plain("p"), plain("p"), plain("p"))

	assert.Empty(t, complete(p[0], p[1]), "claimable after completing jobs without dependents")
	assert.Equal(t, 1, reads.Max(), "the first completion reads the horizon")
	assert.Empty(t, reads.Lookups(), "dependents looked up for jobs above the horizon")
	for range 10 {
		complete(p[2], p[3])
	}
	assert.Equal(t, 1, reads.Max(), "horizon reads within a second")
	assert.Empty(t, reads.Lookups(), "dependents looked up for jobs above the horizon")

	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "then"}: 1}, complete(p[4], first, p[5]), "claimable after completing the dependency")
	assert.Equal(t, [][]int64{{first}}, reads.Lookups(), "dependents looked up: only of the jobs at or below the horizon")

	// Another process's dependent, above the horizon read: found once
	// the news of its commit and depReadGap passed.
	other := insert(plain("other"))[0]
	insert(depJob("q", "next", other, driver.JobPending))
	assert.Empty(t, complete(other), "claimable before the news")
	e.deps.heard.Store(true)
	assert.Empty(t, complete(other), "claimable at the news, before depReadGap passed")
	clock.advance(depReadGap)
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "next"}: 1}, complete(other), "claimable after the news")
	assert.Equal(t, 2, reads.Max(), "horizon reads")
	assert.False(t, e.deps.heard.Load(), "the news is taken by the read")

	// A dependent inserted (with the engine's note: jobnote.OnDependsOn)
	// or claimed in this process raises the horizon without a read.
	here := insert(plain("here"))[0]
	noted, woke := e.noteJobs(ctx)
	insertJobs(t, noted, s, depJob("q", "inserted", here, driver.JobPending))
	woke()
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "inserted"}: 1}, complete(here), "claimable after an insert here")
	chained := insert(depJob("c", "chained", first, driver.JobPending))[0]
	insert(depJob("q", "claimed", chained, driver.JobPending))
	claimed, err := e.Claim(ctx, ClaimRequest{Queues: []string{"c"}, Handlers: []string{"chained"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, chained, claimed[0].Job.ID)
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "claimed"}: 1}, complete(chained), "claimable after a claim here")
	assert.Equal(t, 2, reads.Max(), "horizon reads")

	// Without news, the horizon is read again once depReadMaxAge passed.
	last := insert(plain("last"))[0]
	clock.advance(depReadMaxAge - depReadGap - 1)
	assert.Empty(t, complete(last), "claimable after completing a job without dependents")
	assert.Equal(t, 2, reads.Max(), "horizon reads before depReadMaxAge passed")
	clock.advance(depReadGap + 1)
	assert.Empty(t, complete(last), "claimable after completing a job without dependents")
	assert.Equal(t, 3, reads.Max(), "horizon reads once depReadMaxAge passed")
	assert.Equal(t, [][]int64{{first}, {other}, {here}, {chained}}, reads.Lookups(), "dependents looked up")

	// Several jobs in one completion, one with a dependent inserted
	// here: only that one is looked up.
	more := insert(plain("more"), plain("more"))
	assert.Empty(t, complete(more...), "claimable after completing jobs without dependents")
	assert.Len(t, reads.Lookups(), 4, "dependents looked up for jobs above the horizon")
	before := insert(plain("before"))[0]
	noted, woke = e.noteJobs(ctx)
	insertJobs(t, noted, s, depJob("q", "after", before, driver.JobPending))
	woke()
	later := insert(plain("later"))[0]
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "after"}: 1}, complete(later, before), "claimable after completing the job depended on")
	assert.Equal(t, []int64{before}, reads.Lookups()[4], "dependents looked up: only of the jobs at or below the horizon")
	assert.Equal(t, 3, reads.Max(), "horizon reads")
}

// TestFailedHorizonReadKeepsTheNews: a read of the highest depends_on
// that fails (the completion's transaction fails with it, and is tried
// again) leaves the news of another process's commit that called for it
// untaken, so the next completion reads again and finds the dependent.
func TestFailedHorizonReadKeepsTheNews(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	e, reads, clock := depEngine(s)
	complete := func(id int64) (map[jobnote.Key]int, error) {
		ctx, n := e.newNote(ctx)
		err := e.store.InTx(ctx, func(tx driver.Tx) error {
			return tx.JobComplete(ctx, []int64{id}, time.Now().UTC())
		})
		counts, _ := n.Take()
		return counts, err
	}

	warm := insertJobs(t, ctx, s, depJob("q", "warm", 0, driver.JobPending))[0]
	counts, err := complete(warm)
	require.NoError(t, err)
	require.Empty(t, counts)
	require.Equal(t, 1, reads.Max(), "the first completion reads the horizon")

	// Another process's dependent, and the news of its commit.
	first := insertJobs(t, ctx, s, depJob("q", "first", 0, driver.JobPending))[0]
	insertJobs(t, ctx, s, depJob("q", "next", first, driver.JobPending))
	e.deps.heard.Store(true)
	clock.advance(depReadGap)

	reads.FailNextMax()
	_, err = complete(first)
	require.ErrorIs(t, err, txcount.ErrMaxFailed, "the completion fails with its read")
	require.Equal(t, 2, reads.Max(), "horizon reads")
	counts, err = complete(first)
	require.NoError(t, err)
	assert.Equal(t, 3, reads.Max(), "horizon reads: the failed one's news calls for another")
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "next"}: 1}, counts, "claimable after completing the dependency")
}

// drainPlain inserts plain jobs (none depends on another) of handler
// "plain" into s and has four workers drain them, each taking a batch at a
// time with take, which returns how many jobs it completed (0: none
// left), until none is left; the gate's clock moves on depDrainStep before
// each completion. It then checks that no dependents were looked up, and
// that the highest depends_on was read once, then at most once per
// depReadMaxAge of the gate's clock (and once more, for the edge).
func drainPlain(t *testing.T, s driver.Store, reads *txcount.Reads, clock *fakeDepClock, take func(ctx context.Context, req ClaimRequest) (int, error)) {
	t.Helper()
	ctx := context.Background()
	const jobs, workers, batch = 300, 4, 5
	todo := make([]*driver.Job, jobs)
	for i := range todo {
		todo[i] = depJob("default", "plain", 0, driver.JobPending)
	}
	insertJobs(t, ctx, s, todo...)

	var completed atomic.Int64
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				n, err := take(ctx, ClaimRequest{Queues: []string{"default"}, Handlers: []string{"plain"}, Limit: batch})
				if err != nil || n == 0 {
					errs <- err
					return
				}
				completed.Add(int64(n))
			}
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, jobs, completed.Load(), "jobs completed")

	assert.Empty(t, reads.Lookups(), "dependents looked up in a drain of plain jobs")
	assert.GreaterOrEqual(t, reads.Max(), 1, "horizon reads: the first completion reads it")
	most := 1 + int(clock.elapsed()/depReadMaxAge) + 1
	assert.LessOrEqual(t, reads.Max(), most, "horizon reads in a drain of %s on the gate's clock", clock.elapsed())
	t.Logf("%d horizon reads over %s on the gate's clock", reads.Max(), clock.elapsed())
}

// depDrainStep is how far the gate's clock moves on before each
// completion of drainPlain: its 60 batches take 1.2 s of it.
const depDrainStep = 20 * time.Millisecond

// results returns the successful results of claimed.
func results(claimed []*Claimed) []*Result {
	out := make([]*Result, len(claimed))
	for i, cj := range claimed {
		out[i] = &Result{Claimed: cj, StartedAt: cj.ClaimedAt}
	}
	return out
}

// completeAll records results with CompleteJobs, failing on any error.
func completeAll(ctx context.Context, e *Engine, results []*Result) error {
	errs, err := e.CompleteJobs(ctx, results)
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// TestPlainDrainReadsOnlyTheHorizon: workers draining plain jobs (none
// depends on another) through the engine's claims and combined
// completions look up no dependents, and read the highest depends_on
// once, then about once per depReadMaxAge of the gate's clock.
func TestPlainDrainReadsOnlyTheHorizon(t *testing.T) {
	s := sqliteStore(t)
	e, reads, clock := depEngine(s)
	drainPlain(t, s, reads, clock, func(ctx context.Context, req ClaimRequest) (int, error) {
		claimed, err := e.Claim(ctx, req)
		if err != nil || len(claimed) == 0 {
			return 0, err
		}
		clock.advance(depDrainStep)
		return len(claimed), completeAll(ctx, e, results(claimed))
	})
}

// countingHeldTx is a held claim's transaction that counts its
// dependents reads and runs them on it.
type countingHeldTx struct {
	driver.HeldTx
	txcount.Tx
}

func (c countingHeldTx) JobComplete(ctx context.Context, ids []int64, at time.Time) error {
	return c.HeldTx.JobComplete(jobnote.WithTx(ctx, c), ids, at)
}

func (c countingHeldTx) JobCompleteClaimed(ctx context.Context, ids []int64, token int64, attempts int, at time.Time) (int64, error) {
	return c.HeldTx.JobCompleteClaimed(jobnote.WithTx(ctx, c), ids, token, attempts, at)
}

func (c countingHeldTx) JobCompleteHeld(ctx context.Context, ids []int64, token int64, claimedAt, at time.Time) error {
	return c.HeldTx.JobCompleteHeld(jobnote.WithTx(ctx, c), ids, token, claimedAt, at)
}

// countingHeldStore is a countingStore whose held claims' transactions
// count their dependents reads too.
type countingHeldStore struct {
	countingStore
	held driver.HeldClaimer
}

func (s countingHeldStore) HoldsClaims() bool { return s.held.HoldsClaims() }

func (s countingHeldStore) JournalHeld(ctx context.Context, jobs []driver.HeldJob, expires time.Time) (int64, error) {
	return s.held.JournalHeld(ctx, jobs, expires)
}

func (s countingHeldStore) EndHeldJournal(ctx context.Context, id int64) error {
	return s.held.EndHeldJournal(ctx, id)
}

func (s countingHeldStore) InHeldTx(ctx context.Context, idle time.Duration, fn func(tx driver.HeldTx) error) error {
	return s.held.InHeldTx(ctx, idle, func(tx driver.HeldTx) error {
		return fn(countingHeldTx{HeldTx: tx, Tx: txcount.Tx{Tx: tx, Reads: s.reads}})
	})
}

// TestHeldDrainReadsOnlyTheHorizon is TestPlainDrainReadsOnlyTheHorizon
// for workers that hold their claims (MySQL and MariaDB): the completion
// is written when a held claim settles.
func TestHeldDrainReadsOnlyTheHorizon(t *testing.T) {
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	hs, ok := s.(driver.HeldClaimer)
	require.True(t, ok && hs.HoldsClaims(), "the test server holds claims")
	reads := &txcount.Reads{}
	e := New(countingHeldStore{countingStore: countingStore{Store: s, reads: reads}, held: hs}, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	clock := newFakeDepClock(e.deps)
	var settled atomic.Int64
	drainPlain(t, s, reads, clock, func(ctx context.Context, req ClaimRequest) (int, error) {
		h, err := e.ClaimHeld(ctx, req, HeldParams{Bound: time.Minute, Idle: 5 * time.Minute})
		if err != nil || h == nil {
			return 0, err
		}
		done := results(h.Jobs)
		clock.advance(depDrainStep)
		claimed, err := h.Settle(done, nil)
		if err != nil {
			return 0, err
		}
		if claimed { // not written held (the share was late): recorded as after a claim
			return len(done), completeAll(ctx, e, done)
		}
		settled.Add(int64(len(done)))
		return len(done), nil
	})
	assert.Positive(t, settled.Load(), "jobs completed by settling held claims")
}

// TestStoreCompletionUnderTheEngineNoteWakesForItsDependent: a job that
// the store completes in a transaction run with the engine's job note
// (NoteJobs), by no completion path of the engine's own, wakes an idle
// subscriber that claims its pending dependent once the transaction
// committed: the read of dependents hangs on the store's completion.
func TestStoreCompletionUnderTheEngineNoteWakesForItsDependent(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	e := New(s, Config{Logger: slog.New(slog.DiscardHandler)})
	first := insertJobs(t, ctx, s, depJob("q", "first", 0, driver.JobProcessing))[0]
	insertJobs(t, ctx, s, depJob("q", "then", first, driver.JobPending))
	w := e.SubscribeWakeFor(WakeTarget{Takes: func(_, h string) bool { return h == "then" }})
	defer w.Close()
	w.Idle(true)

	noted, woke := e.NoteJobs(ctx)
	require.NoError(t, s.InTx(noted, func(tx driver.Tx) error {
		return tx.JobComplete(noted, []int64{first}, time.Now().UTC())
	}))
	woke()
	select {
	case <-w.C:
	default:
		t.Fatal("the completion woke no subscriber for the job that depends on it")
	}
}

// TestCombinedCompletionLooksUpDependentsOnce: a completion transaction
// that records the jobs of several claims (workers' completions combined,
// each claim's jobs completed with a guarded UPDATE of its own) looks up
// the dependents of all its jobs with one read, as it reads the horizon
// once, and notes each pending dependent.
func TestCombinedCompletionLooksUpDependentsOnce(t *testing.T) {
	ctx := context.Background()
	s := sqliteStore(t)
	e, reads, _ := depEngine(s)
	parents := insertJobs(t, ctx, s, depJob("c", "parent", 0, driver.JobPending), depJob("c", "parent", 0, driver.JobPending),
		depJob("c", "parent", 0, driver.JobPending))
	noted, woke := e.noteJobs(ctx) // inserted here: the horizon covers the parents
	insertJobs(t, noted, s, depJob("q", "child", parents[0], driver.JobPending), depJob("q", "child", parents[1], driver.JobPending),
		depJob("q", "child", parents[2], driver.JobPending))
	woke()

	var done []*Result
	for range parents { // one claim each: three claim tokens
		claimed, err := e.Claim(ctx, ClaimRequest{Queues: []string{"c"}, Handlers: []string{"parent"}, Limit: 1})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		done = append(done, results(claimed)...)
	}
	ctx, n := e.newNote(ctx)
	errs, err := e.completeJobsOnce(ctx, done)
	require.NoError(t, err)
	require.NoError(t, errors.Join(errs...))
	counts, _ := n.Take()
	assert.Equal(t, map[jobnote.Key]int{{Queue: "q", Handler: "child"}: 3}, counts, "dependents noted")
	require.Len(t, reads.Lookups(), 1, "dependents lookups of the transaction")
	assert.ElementsMatch(t, parents, reads.Lookups()[0], "ids looked up")
}
