package postgres

import (
	"context"
	"log/slog"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/txcount"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// heardNote is one notification a listener heard (Store.heard).
type heardNote struct {
	payload string
	own     bool
}

// openNotifyStore opens a store on dsn whose listener reports every
// notification it hears on the returned channel.
func openNotifyStore(t *testing.T, ctx context.Context, dsn string) (*Store, <-chan heardNote) {
	t.Helper()
	cfg, err := ParseDSN(dsn)
	require.NoError(t, err)
	s, err := OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	notes := make(chan heardNote, 16)
	s.heard = func(payload string, own bool) { notes <- heardNote{payload, own} }
	return s, notes
}

func nextNote(t *testing.T, notes <-chan heardNote, what string) heardNote {
	t.Helper()
	select {
	case n := <-notes:
		return n
	case <-time.After(30 * time.Second):
		t.Fatalf("%s was not heard within 30 s", what)
		return heardNote{}
	}
}

// TestListenerLeavesOutOwnNotifications: a store's listener does not
// wake for the notifications the store sent itself (its process woke its
// workers in-process), and wakes for those of another store on the same
// tables (a separate Open stands for another process) and for an empty
// payload (an older version's).
func TestListenerLeavesOutOwnNotifications(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := testdb.PostgresDSN(t)
	self, notes := openNotifyStore(t, ctx, dsn)
	other, _ := openNotifyStore(t, ctx, dsn)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), self.token, "a store's token")
	require.NotEqual(t, self.token, other.token, "two stores' tokens")

	wakes := make(chan struct{}, 16)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = self.ListenJobs(lctx, func() { wakes <- struct{}{} })
	}()
	defer func() { stop(); <-done }()
	select { // the wake-up once the listener listens
	case <-wakes:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener's first wake-up did not come within 30 s")
	}

	// A listener hears the notifications in the order they were
	// committed, and reports each (heard) after it woke for it.
	require.NoError(t, self.NotifyJobs(ctx))
	require.NoError(t, other.NotifyJobs(ctx))
	_, err := self.DB.ExecContext(ctx, "SELECT pg_notify(?, '')", self.channel)
	require.NoError(t, err)
	assert.Equal(t, heardNote{self.token, true}, nextNote(t, notes, "the store's own notification"))
	assert.Equal(t, heardNote{other.token, false}, nextNote(t, notes, "another store's notification"))
	assert.Equal(t, heardNote{"", false}, nextNote(t, notes, "an empty notification"))
	assert.Len(t, wakes, 2, "wake-ups: another store's and the empty one")
}

// TestOwnDispatchWakesWorkersOnce: a job dispatched through a client
// wakes its idle workers once, in-process; the notification it sends
// for other processes, heard by the client's own listener, wakes them
// no second time (nor counts as another process's commit).
func TestOwnDispatchWakesWorkersOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := testdb.PostgresDSN(t)
	s, notes := openNotifyStore(t, ctx, dsn)
	require.NoError(t, s.Migrate(ctx))
	c := clientseam.NewClient(s, queuety.WithLogger(slog.New(slog.DiscardHandler))).(*queuety.Client)
	wake, unsubscribe := clientseam.Engine(c).SubscribeWake()
	defer unsubscribe()
	select { // the wake-up once the listener listens
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener's first wake-up did not come within 30 s")
	}

	_, err := c.Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	select { // the in-process wake-up, given before Dispatch returned
	case <-wake:
	default:
		t.Fatal("no in-process wake-up after a dispatch")
	}
	assert.Equal(t, heardNote{s.token, true}, nextNote(t, notes, "the dispatch's notification"))
	select {
	case <-wake:
		t.Fatal("the client's own notification woke its workers again")
	default:
	}
}

// TestClientsOnOneDSNShareTheirNotifications: two clients opened on one
// DSN in one process wake each other's idle workers in-process (they
// share the engine's wake key), so the listener of one takes the other's
// notification for its own, not for another process's commit; a store
// opened apart (another process) keeps a token of its own.
func TestClientsOnOneDSNShareTheirNotifications(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := testdb.PostgresDSN(t)
	quiet := queuety.WithLogger(slog.New(slog.DiscardHandler))
	sender, err := queuety.Open(ctx, dsn, quiet)
	require.NoError(t, err)
	t.Cleanup(func() { sender.Close() })
	listener, err := queuety.Open(ctx, dsn, quiet, queuety.SkipMigrate())
	require.NoError(t, err)
	t.Cleanup(func() { listener.Close() })
	ls := clientseam.StoreOf(listener).(*Store)
	notes := make(chan heardNote, 16)
	ls.heard = func(payload string, own bool) { notes <- heardNote{payload, own} }
	apart, _ := openNotifyStore(t, ctx, dsn)
	assert.Equal(t, clientseam.StoreOf(sender).(*Store).notifyToken(), ls.notifyToken(), "the tokens of two clients on one DSN")
	assert.NotEqual(t, apart.notifyToken(), ls.notifyToken(), "the tokens of a client and a store opened apart")

	wake, unsubscribe := clientseam.Engine(listener).SubscribeWake()
	defer unsubscribe()
	select { // the wake-up once the listener listens
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener's first wake-up did not come within 30 s")
	}
	_, err = sender.Dispatch(ctx, "ping", nil)
	require.NoError(t, err)
	select { // the in-process wake-up through the shared hub
	case <-wake:
	default:
		t.Fatal("no in-process wake-up after the other client's dispatch")
	}
	assert.Equal(t, heardNote{ls.notifyToken(), true}, nextNote(t, notes, "the other client's notification"))
	require.NoError(t, apart.NotifyJobs(ctx))
	assert.Equal(t, heardNote{apart.notifyToken(), false}, nextNote(t, notes, "a notification of a store opened apart"))
	select { // the store opened apart woke the workers; the other client did not
	case <-wake:
	default:
		t.Fatal("a notification of a store opened apart woke no one")
	}
	select {
	case <-wake:
		t.Fatal("a second wake-up")
	default:
	}
}

// horizonCounter is a store whose transactions count their dependents
// reads (txcount), run on the store's own transactions.
type horizonCounter struct {
	*Store
	reads *txcount.Reads
}

func (c horizonCounter) InTx(ctx context.Context, fn func(driver.Tx) error) error {
	return c.Store.InTx(ctx, c.reads.Wrap(fn))
}

// TestSteadyOwnDispatchReadsTheHorizonAboutOnceASecond: a process that
// dispatches steadily to its own workers takes none of its notifications
// for another process's commits, so its completions read the highest
// depends_on about once a second, not 20 ms after each notification.
func TestSteadyOwnDispatchReadsTheHorizonAboutOnceASecond(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, _ := testdb.PostgresDSN(t)
	cfg, err := ParseDSN(dsn)
	require.NoError(t, err)
	s, err := OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Migrate(ctx))
	var reads txcount.Reads
	c := clientseam.NewClient(horizonCounter{s, &reads}, queuety.WithLogger(slog.New(slog.DiscardHandler))).(*queuety.Client)
	wake, unsubscribe := clientseam.Engine(c).SubscribeWake()
	defer unsubscribe()
	select { // the wake-up once the listener listens
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener's first wake-up did not come within 30 s")
	}

	const jobs = 300
	var ran atomic.Int64
	all := make(chan struct{})
	w := worker.New(c, worker.Concurrency(4), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.HandleJob("ping", func(context.Context, queuety.Payload) error {
		if ran.Add(1) == jobs {
			close(all)
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond) // a steady dispatch, each job its own commit and notification
	defer tick.Stop()
	for range jobs {
		<-tick.C
		_, err := c.Dispatch(ctx, "ping", nil)
		require.NoError(t, err)
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("%d of %d jobs ran", ran.Load(), jobs)
	}
	elapsed := time.Since(start)
	most := 2 + int(elapsed/time.Second)
	assert.Positive(t, reads.Max(), "horizon reads: the completions read it")
	assert.LessOrEqual(t, reads.Max(), most, "horizon reads over %s of steady dispatch", elapsed)
	t.Logf("%d horizon reads over %s of steady dispatch", reads.Max(), elapsed)
}
