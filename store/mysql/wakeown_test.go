package mysql_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/internal/txcount"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// kills counts the KILL statements among texts.
func kills(texts []string) int {
	n := 0
	for _, s := range texts {
		if strings.HasPrefix(s, "KILL QUERY") {
			n++
		}
	}
	return n
}

// sendLeavesOwnAlone checks that send (one of the listener's own sends)
// reads the listeners once through p and interrupts none, and that
// another's send then wakes the listener (wake) once.
func sendLeavesOwnAlone(t *testing.T, p *testdb.StatementProxy, send, another func() error, wake <-chan struct{}) {
	t.Helper()
	p.Texts()
	require.NoError(t, send()) // reads the listeners and interrupts them before it returns
	texts := p.Texts()
	require.Equal(t, 1, processlistReads(texts), "the send's reads of the listeners: %q", texts)
	require.Zero(t, kills(texts), "the send interrupted a listener of its own process: %q", texts)

	require.NoError(t, another())
	select {
	case <-wake:
	case <-time.After(startedWithin):
		t.Fatal("another process's send did not wake the listener")
	}
	select {
	case <-wake:
		t.Fatal("the listener woke twice")
	default:
	}
}

// TestWakeLeavesOwnListenerAloneAcrossHosts: with a DSN naming several
// servers, a store's send leaves its own listener alone, as with a single
// host: its process woke its workers in-process, and an interrupted sleep
// of its own would pass for another process's commit. The DSN names one
// server twice (through a counting proxy and directly), so the listener
// and the sends run on the same server as on a cluster's node. Another
// process's send still wakes the listener.
func TestWakeLeavesOwnListenerAloneAcrossHosts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := testdb.Prefix(t)
	const server = "127.0.0.1:3306"
	p := testdb.NewStatementProxy(t, server, false)
	p.KeepTexts()
	open := func(dsn string) *mysql.Store {
		cfg, err := mysql.ParseDSN(dsn)
		require.NoError(t, err)
		s, err := mysql.OpenConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open("mysql://root@" + p.Addr + "," + server + "/test?prefix=" + prefix)
	other := open("mysql://root@" + server + "/test?prefix=" + prefix)

	woken := make(chan struct{}, 16)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ListenJobs(lctx, func() { woken <- struct{}{} })
	}()
	defer func() { stop(); <-done }()
	select { // the wake-up once the listener listens
	case <-woken:
	case <-time.After(startedWithin):
		t.Fatal("the listener's first wake-up did not come")
	}
	waitNewListener(t, prefix, map[int64]bool{})

	sendLeavesOwnAlone(t, p, func() error { return s.NotifyJobs(ctx) }, func() error { return other.NotifyJobs(ctx) }, woken)
}

// TestWakeLeavesListenersOfClientsOnOneDSNAlone: two clients opened on
// one DSN in one process wake each other's idle workers in-process (they
// share the engine's wake key), so the sends of one leave the other's
// listener alone, as they leave their own; a store opened apart (another
// process) still wakes it.
func TestWakeLeavesListenersOfClientsOnOneDSNAlone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	const server = "127.0.0.1:3306"
	require.Contains(t, dsn, server)
	p := testdb.NewStatementProxy(t, server, false)
	p.KeepTexts()
	proxied := strings.Replace(dsn, server, p.Addr, 1)
	sender, err := queuety.Open(ctx, proxied, queuety.WithLogger(quietLog()), queuety.SkipMigrate())
	require.NoError(t, err)
	t.Cleanup(func() { sender.Close() })
	listener, err := queuety.Open(ctx, proxied, queuety.WithLogger(quietLog()), queuety.SkipMigrate())
	require.NoError(t, err)
	t.Cleanup(func() { listener.Close() })
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	apart, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { apart.Close() })

	wake, unsubscribe := clientseam.Engine(listener).SubscribeWake()
	defer unsubscribe()
	select { // the wake-up once the listener listens
	case <-wake:
	case <-time.After(startedWithin):
		t.Fatal("the listener's first wake-up did not come")
	}
	waitNewListener(t, prefix, map[int64]bool{})

	sendLeavesOwnAlone(t, p, func() error { return clientseam.StoreOf(sender).(*mysql.Store).NotifyJobs(ctx) },
		func() error { return apart.NotifyJobs(ctx) }, wake)
}

// horizonCounter is a store whose transactions count their dependents
// reads (txcount); its other methods, the wake-up's among them, are the
// store's.
type horizonCounter struct {
	*mysql.Store
	reads *txcount.Reads
}

func (c horizonCounter) InTx(ctx context.Context, fn func(driver.Tx) error) error {
	return c.Store.InTx(ctx, c.reads.Wrap(fn))
}

// TestSteadyOwnDispatchAcrossHostsReadsTheHorizonAboutOnceASecond: a
// process on a DSN naming several servers (here one server twice) that
// dispatches steadily to its own workers hears none of its sends as
// another process's commits, so its completions read the highest
// depends_on about once a second, not 20 ms after each send.
func TestSteadyOwnDispatchAcrossHostsReadsTheHorizonAboutOnceASecond(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	const server = "127.0.0.1:3306"
	require.Contains(t, dsn, server)
	cfg, err := mysql.ParseDSN(strings.Replace(dsn, server, server+",localhost:3306", 1))
	require.NoError(t, err)
	require.Len(t, cfg.Hosts, 2)
	s, err := mysql.OpenConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	var reads txcount.Reads
	c := clientseam.NewClient(horizonCounter{s, &reads}, queuety.WithLogger(quietLog())).(*queuety.Client)

	const jobs = 300
	var ran atomic.Int64
	all := make(chan struct{})
	w := worker.New(c, worker.Concurrency(4), worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
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
	waitNewListener(t, prefix, map[int64]bool{})

	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond) // a steady dispatch, each job its own commit and send
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
	require.Positive(t, reads.Max(), "horizon reads: the completions read it")
	require.LessOrEqual(t, reads.Max(), most, "horizon reads over %s of steady dispatch", elapsed)
	t.Logf("%d horizon reads over %s of steady dispatch", reads.Max(), elapsed)
}

// TestWakeWakesAnotherStoresListenerThatLooksLikeAnOwn: a send knows its
// store's own listeners by their token, not by their server and
// connection id, which another process's listener may share (two
// servers that look alike, a server restarted). Here the listener of a
// store sharing the sender's wake key reports the connection id of
// another store's listener on the same server (pseudo_thread_id sets
// what CONNECTION_ID() returns): the send wakes the other store's
// listener, and leaves its own alone.
func TestWakeWakesAnotherStoresListenerThatLooksLikeAnOwn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	const server = "127.0.0.1:3306"
	require.Contains(t, dsn, server)
	open := func(dsn string) *mysql.Store {
		cfg, err := mysql.ParseDSN(dsn)
		require.NoError(t, err)
		s, err := mysql.OpenConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	listen := func(s *mysql.Store) <-chan struct{} {
		woken := make(chan struct{}, 16)
		lctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.ListenJobs(lctx, func() { woken <- struct{}{} })
		}()
		t.Cleanup(func() { stop(); <-done })
		awaitSignal(t, woken, "the listener's first wake-up did not come")
		return woken
	}

	other := open(dsn)
	otherWoken := listen(other)
	otherID := waitNewListener(t, prefix, map[int64]bool{})

	key := "own-lookalike-" + prefix
	lookalike := open(dsn + "&pseudo_thread_id=" + strconv.FormatInt(otherID, 10))
	lookalike.ShareWake(key)
	ownWoken := listen(lookalike)
	waitNewListener(t, prefix, map[int64]bool{otherID: true})

	p := testdb.NewStatementProxy(t, server, false)
	p.KeepTexts()
	sender := open(strings.Replace(dsn, server, p.Addr, 1))
	sender.ShareWake(key)
	p.Texts()
	require.NoError(t, sender.NotifyJobs(ctx))
	texts := p.Texts()
	require.Equal(t, 1, processlistReads(texts), "the send's reads of the listeners: %q", texts)
	require.Equal(t, 1, kills(texts), "the send's interruptions: %q", texts)
	awaitSignal(t, otherWoken, "the send did not wake the other store's listener, whose connection id an own listener reports")
	select {
	case <-ownWoken:
		t.Fatal("the send woke a listener of its own wake key")
	default:
	}
}
