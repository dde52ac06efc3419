package mysql_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// processlistReads counts the listener reads among texts.
func processlistReads(texts []string) int {
	n := 0
	for _, s := range texts {
		if strings.Contains(s, "information_schema.PROCESSLIST") {
			n++
		}
	}
	return n
}

// readsWhileDispatching dispatches jobs through c as fast as it can and,
// once the store's first QuietAfter of finding no listener has passed
// (for that long a store reads at every send still; TestSendWait pins
// the rule), counts the processlist reads p sees over at least 3 s and
// 30 dispatches. The dispatches stop before it returns.
func readsWhileDispatching(t *testing.T, ctx context.Context, c *queuety.Client, p *testdb.StatementProxy) (time.Duration, int64, int) {
	t.Helper()
	var dispatched atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Dispatch(ctx, "other", nil); err != nil {
				t.Error(err)
				return
			}
			dispatched.Add(1)
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()
	require.Eventually(t, func() bool { return dispatched.Load() >= 5 }, startedWithin, time.Millisecond)
	time.Sleep(mysql.QuietAfter + 500*time.Millisecond)
	p.Texts() // Texts forgets what it returns: the count starts here
	t0, d0 := time.Now(), dispatched.Load()
	require.Eventually(t, func() bool { return time.Since(t0) >= 3*time.Second && dispatched.Load()-d0 >= 30 },
		time.Minute, 10*time.Millisecond, "too few dispatches to count")
	return time.Since(t0), dispatched.Load() - d0, processlistReads(p.Texts())
}

// TestWakeQuietWithoutListener: a process that keeps committing jobs
// while no process listens reads the processlist about once a second, not
// once a commit, counted through a counting proxy; a listener that starts
// while the commits go on is still woken by them.
func TestWakeQuietWithoutListener(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	const server = "127.0.0.1:3306"
	require.Contains(t, dsn, server)
	p := testdb.NewStatementProxy(t, server, false)
	dispatch, err := queuety.Open(ctx, strings.Replace(dsn, server, p.Addr, 1), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { dispatch.Close() })
	p.KeepTexts()

	elapsed, d, r := readsWhileDispatching(t, ctx, dispatch, p)
	t.Logf("%d dispatches, %d processlist reads in %s", d, r, elapsed.Round(time.Millisecond))
	require.LessOrEqual(t, float64(r), elapsed.Seconds()+2, "reads the processlist more than once a second with no listener")

	// A listener that starts now is woken by the next commits.
	_, ran := wakeClients(t, ctx, dsn, dsn, nil)
	waitNewListener(t, prefix, map[int64]bool{})
	_, err = dispatch.Dispatch(ctx, "ping", queuety.Payload{"n": "heard"})
	require.NoError(t, err)
	waitRun(t, ran, "heard", "dispatched by a process whose last reads found no listener")
}

// TestWakeQuietWithOwnListener: a process whose own workers listen, and
// which keeps committing jobs while no other process listens, reads the
// processlist about once a second too: its sends leave its own listener
// alone (its workers are woken in-process), so they find no listener. A
// listener of another process that starts meanwhile is still woken.
func TestWakeQuietWithOwnListener(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, prefix := migrated.DSN(t)
	const server = "127.0.0.1:3306"
	require.Contains(t, dsn, server)
	p := testdb.NewStatementProxy(t, server, false)
	client, err := queuety.Open(ctx, strings.Replace(dsn, server, p.Addr, 1), queuety.WithLogger(quietLog()))
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	p.KeepTexts()
	// The process's own worker, listening: the jobs below are not its.
	w := worker.New(client, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
	w.HandleJob("own", func(context.Context, queuety.Payload) error { return nil })
	runCtx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stopWorker()
		<-workerDone
	})
	own := waitNewListener(t, prefix, map[int64]bool{})

	elapsed, d, r := readsWhileDispatching(t, ctx, client, p)
	t.Logf("%d dispatches, %d processlist reads in %s", d, r, elapsed.Round(time.Millisecond))
	require.LessOrEqual(t, float64(r), elapsed.Seconds()+2, "reads the processlist more than once a second with only its own listener")

	// A listener of another process that starts now is woken by the next commits.
	_, ran := wakeClients(t, ctx, dsn, dsn, nil)
	waitNewListener(t, prefix, map[int64]bool{own: true})
	_, err = client.Dispatch(ctx, "ping", queuety.Payload{"n": "heard"})
	require.NoError(t, err)
	waitRun(t, ran, "heard", "dispatched by a process whose last reads found only its own listener")
}
