package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// holdObserver makes a worker's attempts of one handler wait, before they
// start, until release is closed, and reports each held start on held.
// emptyClaims gets a signal (without blocking) after every claim that
// found nothing.
type holdObserver struct {
	observe.Nop
	handler     string
	held        chan struct{}
	release     chan struct{}
	emptyClaims chan struct{}
}

func (o *holdObserver) JobStart(ctx context.Context, j observe.Job) context.Context {
	if j.Handler == o.handler {
		o.held <- struct{}{}
		<-o.release
	}
	return ctx
}

func (o *holdObserver) Claimed(ctx context.Context, c observe.Claim) context.Context {
	if len(c.Jobs) == 0 && c.Err == nil && o.emptyClaims != nil {
		select {
		case o.emptyClaims <- struct{}{}:
		default:
		}
	}
	return ctx
}

// holdingProcess opens process A of the wake-up tests on dsn: a client of
// its own and a worker polling every longPoll, with the handlers handle
// registers, whose attempts of handler hold wait until the returned
// observer's release is closed (each held start is reported on its held).
func holdingProcess(t *testing.T, ctx context.Context, dsn, hold string, handle func(w *worker.Worker)) (*queuety.Client, *holdObserver) {
	t.Helper()
	obs := &holdObserver{handler: hold, held: make(chan struct{}, 1), release: make(chan struct{})}
	a, err := queuety.Open(ctx, dsn+"&timeout=11s", queuety.WithLogger(quietLog()), queuety.WithObserver(obs))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	w := worker.New(a, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.WithLogger(quietLog()))
	handle(w)
	runWorker(t, ctx, w)
	return a, obs
}

// idleProcess opens process B of the wake-up tests on dsn, of the table
// prefix prefix: a client of its own, on a DSN of its own so that no
// in-process wake-up reaches it, and a worker polling every longPoll, idle
// or not, with the handlers handle registers. It returns once B's
// wake-up listener sleeps and B made a claim that found nothing; the
// returned channel gets a signal (without blocking) after every further
// empty claim.
func idleProcess(t *testing.T, ctx context.Context, dsn, prefix string, handle func(w *worker.Worker)) <-chan struct{} {
	t.Helper()
	idle := &holdObserver{emptyClaims: make(chan struct{}, 1)}
	before := listeners(t, prefix)
	b, err := queuety.Open(ctx, dsn+"&timeout=12s", queuety.WithLogger(quietLog()), queuety.WithObserver(idle))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	w := worker.New(b, worker.NoMaintenance(), worker.PollInterval(longPoll), worker.IdlePollInterval(longPoll), worker.WithLogger(quietLog()))
	handle(w)
	runWorker(t, ctx, w)
	waitNewListener(t, prefix, before)
	awaitSignal(t, idle.emptyClaims, "worker B made no empty claim") // B found nothing it can run and waits for its poll
	return idle.emptyClaims
}

// awaitSignal waits startedWithin at most for a signal on ch, and fails t
// with msg without one.
func awaitSignal(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(startedWithin):
		t.Fatal(msg)
	}
}

// awaitWoken returns what process B ran first (on ran), failing t unless
// it started within startedWithin: B polls every longPoll, so job, made
// claimable by waker in another process, must have been started by a
// wake-up.
func awaitWoken(t *testing.T, ran <-chan string, job, waker string) string {
	t.Helper()
	select {
	case got := <-ran:
		return got
	case <-time.After(startedWithin):
		t.Fatalf("B did not start %s within %s (it polls every %s): %s woke no other process", job, startedWithin, longPoll, waker)
	}
	return ""
}
