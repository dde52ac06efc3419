package worker_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// woken counts the subscriptions that hold a wake-up, taking them.
func woken(chs ...<-chan struct{}) int {
	n := 0
	for _, ch := range chs {
		select {
		case <-ch:
			n++
		default:
		}
	}
	return n
}

// TestOneJobWakesOneOfFour: a commit of one job wakes one of four
// subscribers, not all. (SQLite: no listener of other processes' commits
// adds wake-ups.)
func TestOneJobWakesOneOfFour(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	e := clientseam.Engine(c)
	var plain []<-chan struct{}
	for range 4 {
		ch, unsubscribe := e.SubscribeWake()
		t.Cleanup(unsubscribe)
		plain = append(plain, ch)
	}
	_, err := c.Dispatch(ctx, "count.job", nil)
	require.NoError(t, err)
	require.Equal(t, 1, woken(plain...), "one job committed: one subscriber woken")
	_, err = c.DispatchMany(ctx, []queuety.JobRequest{{Handler: "count.job"}, {Handler: "count.job"}})
	require.NoError(t, err)
	require.Equal(t, 1, woken(plain...), "a subscriber that claims any number takes both")
}

// TestCommitWakesAsManyAsClaim: a commit of jobs wakes as many idle
// subscribers as their claims need, only those that claim the jobs, and a
// burst wakes them all.
func TestCommitWakesAsManyAsClaim(t *testing.T) {
	ctx := context.Background()
	c := sqliteClient(t)
	e := clientseam.Engine(c)

	// Four idle subscribers that claim two jobs each, and one that claims
	// another handler only.
	var subs []*engine.WakeSub
	var chs []<-chan struct{}
	for range 4 {
		s := e.SubscribeWakeFor(engine.WakeTarget{Batch: func() int { return 2 }, Takes: func(_, h string) bool { return h == "count.job" }})
		t.Cleanup(s.Close)
		subs = append(subs, s)
		chs = append(chs, s.C)
	}
	other := e.SubscribeWakeFor(engine.WakeTarget{Batch: func() int { return 2 }, Takes: func(_, h string) bool { return h == "count.other" }})
	t.Cleanup(other.Close)
	idle := func() {
		woken(chs...)
		woken(other.C)
		for _, s := range subs {
			s.Idle(true)
		}
		other.Idle(true)
	}
	burst := func(n int) {
		reqs := make([]queuety.JobRequest, n)
		for i := range reqs {
			reqs[i] = queuety.JobRequest{Handler: "count.job"}
		}
		_, err := c.DispatchMany(ctx, reqs)
		require.NoError(t, err)
	}
	idle()
	burst(3)
	require.Equal(t, 2, woken(chs...), "three jobs, two a claim: two woken")
	require.Zero(t, woken(other.C), "the subscriber that does not claim the jobs sleeps on")
	idle()
	burst(100)
	require.Equal(t, 4, woken(chs...), "a burst wakes every idle subscriber")
	idle()
	_, err := c.Dispatch(ctx, "count.other", nil)
	require.NoError(t, err)
	require.Equal(t, 1, woken(other.C), "the one subscriber that claims the job is woken")
	require.Zero(t, woken(chs...))
}

// barrierJobs returns a handler that returns once n of its calls run at
// once (or its context ends), and reports each start on started.
func barrierJobs(n int, started *atomic.Int32, all chan struct{}) queuety.JobFunc {
	return func(ctx context.Context, _ queuety.Payload) error {
		if started.Add(1) == int32(n) {
			close(all)
		}
		select {
		case <-all:
		case <-ctx.Done():
		}
		return nil
	}
}

// countingEmpty counts the claims that found nothing.
type countingEmpty struct {
	observe.Nop
	n *atomic.Int32
}

func (c countingEmpty) Claimed(ctx context.Context, cl observe.Claim) context.Context {
	if len(cl.Jobs) == 0 && cl.Err == nil {
		c.n.Add(1)
	}
	return ctx
}

// idleWorkers starts n idle workers of concurrency 1 (poll interval an
// hour) running handler, and waits until each made its first empty claim.
func idleWorkers(t *testing.T, n int, handler queuety.JobFunc) *queuety.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	empty := &atomic.Int32{}
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()), queuety.WithObserver(countingEmpty{n: empty}))
	require.NoError(t, err)
	var done []chan error
	t.Cleanup(func() {
		cancel()
		for _, d := range done {
			require.NoError(t, <-d)
		}
		c.Close()
	})
	for range n {
		w := worker.New(c, worker.PollInterval(time.Hour), worker.Concurrency(1), worker.NoMaintenance(), worker.WithLogger(quiet()))
		w.HandleJob("wake.burst", handler)
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- w.Run(ctx) }()
	}
	require.Eventually(t, func() bool { return empty.Load() >= int32(n) }, 30*time.Second, time.Millisecond)
	return c
}

// TestBurstWakesEveryIdleWorker: four jobs committed at once start at
// once on four idle workers of one job each.
func TestBurstWakesEveryIdleWorker(t *testing.T) {
	started := &atomic.Int32{}
	all := make(chan struct{})
	c := idleWorkers(t, 4, barrierJobs(4, started, all))
	reqs := []queuety.JobRequest{{Handler: "wake.burst"}, {Handler: "wake.burst"}, {Handler: "wake.burst"}, {Handler: "wake.burst"}}
	_, err := c.DispatchMany(context.Background(), reqs)
	require.NoError(t, err)
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of 4 jobs started: the burst left idle workers asleep", started.Load())
	}
}

// TestFullClaimPassesWakeOn: a worker woken for one job whose claim fills
// its batch wakes another idle worker, for more jobs may wait than the
// wake-up counted (here one that no wake-up announced).
func TestFullClaimPassesWakeOn(t *testing.T) {
	started := &atomic.Int32{}
	all := make(chan struct{})
	c := idleWorkers(t, 2, barrierJobs(2, started, all))
	ctx := context.Background()
	tx, err := c.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = c.DispatchTx(ctx, tx, "wake.burst", nil) // announced by no wake-up
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	_, err = c.Dispatch(ctx, "wake.burst", nil)
	require.NoError(t, err)
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of 2 jobs started: the woken worker left the other asleep", started.Load())
	}
}
