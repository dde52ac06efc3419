package worker_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// proxy forwards TCP connections to the database and can cut them all,
// refusing new ones until it is restored: the database "goes away".
type proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every open connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// restore listens again on the same address.
func (p *proxy) restore(t *testing.T) {
	for i := 0; ; i++ {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.serve(ln)
			return
		}
		require.LessOrEqual(t, i, 100, "re-listen on %s: %v", p.addr, err)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDatabaseGoesAwayMidRun runs a worker through a proxy, cuts every
// connection to the database while jobs are running, keeps it away for two
// seconds, and brings it back. The worker must not crash or stop: it logs,
// retries, and every job completes; none is buried or lost.
func TestDatabaseGoesAwayMidRun(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t) // root@tcp(127.0.0.1:3306)/test?prefix=...
	direct, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer direct.Close()
	const total = 400
	reqs := make([]queuety.JobRequest, total)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "work", Payload: queuety.State{"i": i}}
	}
	_, err = direct.DispatchMany(ctx, reqs)
	require.NoError(t, err)

	p := startProxy(t, "127.0.0.1:3306")
	proxied := strings.Replace(dsn, "tcp(127.0.0.1:3306)", "tcp("+p.addr+")", 1)
	if proxied == dsn {
		t.Skip("the test server is not at 127.0.0.1:3306")
	}
	c, err := queuety.Open(ctx, proxied+"&timeout=2s&readTimeout=5s&writeTimeout=5s", queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()

	var ran atomic.Int64
	runs := make([]atomic.Int32, total)
	halfway := make(chan struct{})
	var once sync.Once
	w := worker.New(c, worker.Concurrency(8), worker.NoMaintenance(), worker.PollInterval(20*time.Millisecond),
		worker.LeaseInterval(200*time.Millisecond), worker.WithLogger(quiet()))
	w.HandleJob("work", func(ctx context.Context, pl queuety.Payload) error {
		i, _ := pl.Int("i")
		runs[i].Add(1)
		if ran.Add(1) == total/4 {
			once.Do(func() { close(halfway) })
		}
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	run := runWorker(t, w)

	select {
	case <-halfway:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the worker did not start")
	}
	p.cut()
	time.Sleep(2 * time.Second) // the database is away
	select {
	case <-run.done:
		require.FailNow(t, "the worker stopped while the database was away", "Run returned %v", run.err)
	default:
	}
	p.restore(t)

	requireAllCompleted(t, direct, total, 90*time.Second, 50*time.Millisecond)
	require.NoError(t, run.stop(t), "Run") // Run returns nil after a clean shutdown
	// No attempt failed. A job completes once, so at most total successes
	// were recorded; a success whose commit was lost with its reply is
	// rejected as stale when it is recorded again.
	st := w.Stats()
	assert.Zero(t, st.Failed, "failed; stats %+v", st)
	assert.LessOrEqual(t, st.Succeeded, int64(total), "succeeded; stats %+v", st)
	assert.GreaterOrEqual(t, st.Succeeded+st.Stale, int64(total), "succeeded or stale; stats %+v", st)
	dup := 0
	for i := range runs {
		n := runs[i].Load()
		require.NotZero(t, n, "job %d never ran", i)
		if n > 1 {
			dup++ // at-least-once: an attempt whose result was lost with the connection runs again
		}
	}
	t.Logf("%d of %d jobs ran more than once (their first result was lost with the connection)", dup, total)
}
