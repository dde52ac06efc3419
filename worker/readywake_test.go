package worker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// The tests of this file check that a commit that makes jobs claimable
// without inserting them (a job handed back, a concurrency group slot
// freed by a completion, a stale recovery or a timeout, a completed
// dependency) wakes an idle worker at once, though its poll intervals are
// far longer than the tests wait.

// readyPoll is the idle workers' poll interval: the jobs must start far
// sooner (readyWithin).
const (
	readyPoll   = time.Minute
	readyWithin = 10 * time.Second
)

// readyFixture is a client and the idle workers on it.
type readyFixture struct {
	t      *testing.T
	ctx    context.Context
	c      *queuety.Client
	idle   chan struct{} // an empty claim
	ran    chan string   // the handlers started, by name
	cancel context.CancelFunc
	done   []chan error
}

func newReadyFixture(t *testing.T, dsn string, opts ...queuety.Option) *readyFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &readyFixture{t: t, ctx: ctx, cancel: cancel, idle: make(chan struct{}, 1), ran: make(chan string, 16)}
	c, err := queuety.Open(ctx, dsn, append([]queuety.Option{queuety.WithLogger(quiet()), queuety.WithObserver(emptyClaims(f.idle))}, opts...)...)
	require.NoError(t, err)
	f.c = c
	t.Cleanup(func() {
		cancel()
		for _, d := range f.done {
			require.NoError(t, <-d)
		}
		c.Close()
	})
	return f
}

// start runs an idle worker with handlers (each reports its start on ran,
// then waits for release when one is given) and waits for its first empty
// claim.
func (f *readyFixture) start(release chan struct{}, handlers []string, opts ...worker.Option) {
	f.t.Helper()
	f.startWith(func(w *worker.Worker) {
		for _, h := range handlers {
			w.HandleJob(h, func(ctx context.Context, _ queuety.Payload) error {
				f.ran <- h
				if release != nil {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return nil
			})
		}
	}, opts...)
}

// startWith runs an idle worker with the handlers register gives it and
// waits for its first empty claim.
func (f *readyFixture) startWith(register func(w *worker.Worker), opts ...worker.Option) {
	f.t.Helper()
	w := worker.New(f.c, append([]worker.Option{worker.PollInterval(readyPoll), worker.IdlePollInterval(readyPoll),
		worker.Concurrency(1), worker.NoMaintenance(), worker.WithLogger(quiet())}, opts...)...)
	register(w)
	done := make(chan error, 1)
	f.done = append(f.done, done)
	f.drainIdle()
	go func() { done <- w.Run(f.ctx) }()
	f.idleNow()
}

// idleNow waits for an empty claim.
func (f *readyFixture) idleNow() {
	f.t.Helper()
	select {
	case <-f.idle:
	case <-time.After(30 * time.Second):
		f.t.Fatal("the worker made no empty claim")
	}
}

// drainIdle forgets the empty claims made so far.
func (f *readyFixture) drainIdle() {
	select {
	case <-f.idle:
	default:
	}
}

// waitRan waits for handler to start, within readyWithin.
func (f *readyFixture) waitRan(handler, why string) {
	f.t.Helper()
	select {
	case got := <-f.ran:
		require.Equal(f.t, handler, got)
	case <-time.After(readyWithin):
		f.t.Fatalf("%s did not start: %s woke no idle worker", handler, why)
	}
}

// TestGroupSlotFreedWakesIdleWorker: a job held back by its concurrency
// group's limit starts as soon as the group's running job completes, on
// another worker.
func TestGroupSlotFreedWakesIdleWorker(t *testing.T) {
	dsn, _ := testdb.DSN(t)
	f := newReadyFixture(t, dsn)
	release := make(chan struct{})
	f.start(release, []string{"grp.first"}, worker.GroupLimit("grp", 1))
	f.start(nil, []string{"grp.second"}, worker.GroupLimit("grp", 1))
	opts := []queuety.JobOption{queuety.ConcurrencyGroup("grp"), queuety.ConcurrencyLimit(1)}
	_, err := f.c.Dispatch(f.ctx, "grp.first", nil, opts...)
	require.NoError(t, err)
	f.waitRan("grp.first", "the dispatch")
	f.drainIdle()
	_, err = f.c.Dispatch(f.ctx, "grp.second", nil, opts...)
	require.NoError(t, err)
	f.idleNow() // the second job's worker found the group full and waits again
	close(release)
	f.waitRan("grp.second", "freeing the group's slot")
}

// groupHeldBack dispatches a job of concurrency group "grp" (limit 1),
// claims it with no worker to run it, then starts an idle worker for
// "grp.next" and dispatches one: the group is full, so the worker waits
// again. The test then frees the slot.
func (f *readyFixture) groupHeldBack(handler string, opts ...queuety.JobOption) {
	f.t.Helper()
	group := []queuety.JobOption{queuety.ConcurrencyGroup("grp"), queuety.ConcurrencyLimit(1)}
	_, err := f.c.Dispatch(f.ctx, handler, nil, append(group, opts...)...)
	require.NoError(f.t, err)
	claimed, err := clientseam.Engine(f.c).Claim(f.ctx, engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{handler}, Limit: 1})
	require.NoError(f.t, err)
	require.Len(f.t, claimed, 1, "the group's running job, which no worker runs")
	f.start(nil, []string{"grp.next"}, worker.GroupLimit("grp", 1))
	_, err = f.c.Dispatch(f.ctx, "grp.next", nil, group...)
	require.NoError(f.t, err)
	f.idleNow() // the group is full: the worker waits again
}

// TestStaleRecoveryFreeingGroupSlotWakesIdleWorker: a job held back by
// its concurrency group's limit starts as soon as stale recovery takes
// back the group's running job, whose claim nothing renews.
func TestStaleRecoveryFreeingGroupSlotWakesIdleWorker(t *testing.T) {
	dsn, _ := testdb.DSN(t)
	f := newReadyFixture(t, dsn, queuety.WithStaleTimeout(time.Second), queuety.WithLeaseTimeout(time.Second))
	f.groupHeldBack("grp.lost")
	require.Eventually(t, func() bool {
		n, err := f.c.RecoverStale(f.ctx)
		require.NoError(t, err)
		return n == 1
	}, readyWithin, 100*time.Millisecond, "stale recovery takes the lost job back")
	f.waitRan("grp.next", "stale recovery freeing the group's slot")
}

// TestTimeoutFreeingGroupSlotWakesIdleWorker: a job held back by its
// concurrency group's limit starts as soon as the timeout sweep retries
// the group's running job, past its start-to-close deadline.
func TestTimeoutFreeingGroupSlotWakesIdleWorker(t *testing.T) {
	dsn, _ := testdb.DSN(t)
	f := newReadyFixture(t, dsn)
	f.groupHeldBack("grp.slow", queuety.StartToClose(time.Second))
	sweeper := deadline.New(f.c)
	require.Eventually(t, func() bool {
		n, err := sweeper.Timeouts(f.ctx)
		require.NoError(t, err)
		return n == 1
	}, readyWithin, 100*time.Millisecond, "the timeout sweep retries the slow job")
	f.waitRan("grp.next", "the timeout freeing the group's slot")
}

// TestReleaseWakesIdleWorker: a claimed job handed back starts at once on
// an idle worker. (On SQLite, whose idle workers no listener wakes when it
// starts: the wake-up can only come from the hand-back.)
func TestReleaseWakesIdleWorker(t *testing.T) {
	f := newReadyFixture(t, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
	_, err := f.c.Dispatch(f.ctx, "rel.job", nil)
	require.NoError(t, err)
	e := clientseam.Engine(f.c)
	claimed, err := e.Claim(f.ctx, engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"rel.job"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	f.start(nil, []string{"rel.job"})
	require.NoError(t, e.Release(f.ctx, claimed))
	f.waitRan("rel.job", "handing it back")
}

// TestCompletedDependencyWakesIdleWorker: a job that depends on another
// (a chain's next job, a job dispatched with DependsOn) starts as soon as
// that one completes, on another worker, which polls every readyPoll.
func TestCompletedDependencyWakesIdleWorker(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dispatch func(f *readyFixture) // dispatches dep.first and dep.next, which depends on it
	}{
		{"chain", func(f *readyFixture) {
			_, err := f.c.Chain(queuety.JobRequest{Handler: "dep.first"}, queuety.JobRequest{Handler: "dep.next"}).Dispatch(f.ctx)
			require.NoError(f.t, err)
			f.waitRan("dep.first", "the dispatch")
		}},
		{"depends on", func(f *readyFixture) {
			first, err := f.c.Dispatch(f.ctx, "dep.first", nil)
			require.NoError(f.t, err)
			f.waitRan("dep.first", "the dispatch")
			f.drainIdle()
			_, err = f.c.Dispatch(f.ctx, "dep.next", nil, queuety.DependsOn(first))
			require.NoError(f.t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := testdb.DSN(t)
			f := newReadyFixture(t, dsn)
			release := make(chan struct{})
			f.start(release, []string{"dep.first"})
			f.start(nil, []string{"dep.next"})
			tc.dispatch(f)
			f.idleNow() // the next job's worker, woken by the dispatch, found its dependency running and waits again
			close(release)
			f.waitRan("dep.next", "completing its dependency")
		})
	}
	// A held claim (worker.HoldClaims) completes the chain's first job in
	// the transaction that locked it: its handler returns at once, a
	// second after the dispatch, long after the next job's worker found
	// nothing and went back to sleep.
	t.Run("held claim", func(t *testing.T) {
		dsn, _ := testdb.DSN(t)
		f := newReadyFixture(t, dsn)
		f.start(nil, []string{"dep.first"}, worker.HoldClaims(time.Minute))
		f.start(nil, []string{"dep.next"})
		_, err := f.c.Chain(queuety.JobRequest{Handler: "dep.first", Options: []queuety.JobOption{queuety.Delay(time.Second)}},
			queuety.JobRequest{Handler: "dep.next"}).Dispatch(f.ctx)
		require.NoError(t, err)
		f.idleNow()
		f.waitRan("dep.first", "its due time")
		f.waitRan("dep.next", "completing its dependency")
	})
}

// TestBatchDependencyWakesIdleWorker: a batch job dispatched with
// DependsOn starts as soon as its dependency completes, on another
// worker, though the process read its store's highest depends_on (which
// tells whether a completed job may have dependents) just before the
// batch was dispatched and does not read it again: the batch's dispatch
// tells the process of its dependency itself. The gate's clock stands
// still, so however long the test takes the horizon is not read again
// (on SQLite, which tells the process of no other process's jobs).
func TestBatchDependencyWakesIdleWorker(t *testing.T) {
	f := newReadyFixture(t, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
	clientseam.Engine(f.c).SetDependentsClock(func() time.Duration { return 0 })
	release := make(chan struct{})
	f.start(release, []string{"dep.first"})
	f.start(nil, []string{"dep.next"})
	first, err := f.c.Dispatch(f.ctx, "dep.first", nil)
	require.NoError(t, err)
	f.waitRan("dep.first", "the dispatch")

	// A job completed now reads the store's highest depends_on: none yet.
	_, err = f.c.Dispatch(f.ctx, "dep.warm", nil)
	require.NoError(t, err)
	e := clientseam.Engine(f.c)
	claimed, err := e.Claim(f.ctx, engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"dep.warm"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.NoError(t, e.Finish(f.ctx, &engine.Result{Claimed: claimed[0]}))

	f.drainIdle()
	_, err = f.c.NewBatch(queuety.JobRequest{Handler: "dep.next", Options: []queuety.JobOption{queuety.DependsOn(first)}}).Dispatch(f.ctx)
	require.NoError(t, err)
	f.idleNow() // the next job's worker, woken by the dispatch, found its dependency running and waits again
	close(release)
	f.waitRan("dep.next", "completing its dependency")
}

// TestCancelledBatchCallbackWakesIdleWorker: the finally callback that
// cancelling a batch enqueues starts at once on an idle worker.
func TestCancelledBatchCallbackWakesIdleWorker(t *testing.T) {
	f := newReadyFixture(t, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
	id, err := f.c.NewBatch(queuety.JobRequest{Handler: "b.job"}).Finally("b.finally").Dispatch(f.ctx)
	require.NoError(t, err)
	f.startWith(func(w *worker.Worker) {
		w.HandleBatchCallback("b.finally", func(context.Context, *queuety.Batch) error {
			f.ran <- "b.finally"
			return nil
		})
	})
	require.NoError(t, f.c.CancelBatch(f.ctx, id))
	f.waitRan("b.finally", "cancelling its batch")
}

// TestCompletedStepWakesIdleWorkerForItsDependent: a job dispatched with
// DependsOn on a workflow step's job (here by the step's own handler,
// with its JobInfo) starts as soon as the step completes, on another
// worker, whether the step's completion is recorded with others (a
// single step) or on its own (a parallel branch).
func TestCompletedStepWakesIdleWorkerForItsDependent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		workflow *builder.Builder
	}{
		{"single step", builder.Workflow("wf").Then("wf.step")},
		{"parallel branch", builder.Workflow("wf").Parallel("wf.step", "wf.other")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newReadyFixture(t, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
			release := make(chan struct{})
			dispatched := make(chan error, 1)
			f.startWith(func(w *worker.Worker) {
				w.HandleStep("wf.step", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
					info, _ := queuety.JobInfoFrom(ctx)
					_, err := f.c.Dispatch(ctx, "dep.after", nil, queuety.DependsOn(info.JobID))
					dispatched <- err
					select {
					case <-release:
					case <-ctx.Done():
					}
					return nil, nil
				})
			})
			f.start(nil, []string{"dep.after"})
			_, err := tc.workflow.Dispatch(f.ctx, f.c, nil)
			require.NoError(t, err)
			select {
			case err := <-dispatched:
				require.NoError(t, err)
			case <-time.After(readyWithin):
				t.Fatal("the step did not start")
			}
			f.idleNow() // the dependent's worker, woken by its dispatch, found the step running and waits again
			close(release)
			f.waitRan("dep.after", "completing the step it depends on")
		})
	}
}
