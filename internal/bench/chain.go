package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// The chain scenarios' jobs: a chain of chainLinks jobs (each depends on
// the one before), whose handlers alternate between chainHandlerA and
// chainHandlerB, each run by a worker of its own, and work (sleep) for
// chainWork. Each job carries its place in the chain ("i").
const (
	chainHandlerA = "bench_chain_a"
	chainHandlerB = "bench_chain_b"
	chainLinks    = 6
	// chainWork is long enough that the worker of the next job has
	// polled its way to idle (PollIntervalBusy doubling up to the poll
	// interval, 1.55 s) while the job before runs.
	chainWork = 2 * time.Second
)

// chainProbes are chain-inproc and chain-xproc: the workers of the two
// handlers have the default poll intervals; chain-inproc runs both in
// this process, chain-xproc the worker of chainHandlerB in a child
// process. A link's latency is its job's start time minus the time the
// handler of the job before it returned: that job's completion, the
// wake-up of the other worker (or its poll) and its claim. They report
// the p50 and p99 of the links (chainLinks-1 a run) in milliseconds.
func chainProbes(p Probes, cfg Config) []probe {
	extra := map[string]float64{"poll_interval_ms": ms(worker.PollIntervalDefault), "idle_poll_interval_ms": ms(worker.IdlePollIntervalDefault),
		"links": chainLinks, "work_ms": ms(chainWork)}
	mk := func(name string, measure latencyMeasure) probe { return percentileProbe(name, extra, measure) }
	return []probe{
		mk("chain-inproc", func(ctx context.Context, c *queuety.Client, dsn string) ([]float64, error) {
			return chainLatency(ctx, c, dsn, p, cfg.Concurrency, false)
		}),
		mk("chain-xproc", func(ctx context.Context, c *queuety.Client, dsn string) ([]float64, error) {
			return chainLatency(ctx, c, dsn, p, cfg.Concurrency, true)
		}),
	}
}

// chainLatency runs the worker of chainHandlerA on a client of its own in
// this process and that of chainHandlerB in this process too or in a
// child process (xproc), waits until the latter ran a warm-up job,
// dispatches the chain through setup and returns its links' latencies.
func chainLatency(ctx context.Context, setup *queuety.Client, dsn string, p Probes, concurrency int, xproc bool) ([]float64, error) {
	c, err := open(ctx, dsn, queuety.SkipMigrate())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	mine := chainLinks
	if xproc {
		mine -= chainLinks / 2 // the child runs and reports the others
	}
	links := newChainRecorder(mine)
	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	run := func(handler string, extra func(*worker.Worker)) {
		w := worker.New(c, worker.Concurrency(concurrency), worker.WithLogger(quiet()))
		w.HandleJob(handler, links.handle)
		if extra != nil {
			extra(w)
		}
		running.Add(1)
		go func() { defer running.Done(); _ = w.Run(runCtx) }()
	}
	run(chainHandlerA, nil)
	// The worker of chainHandlerB runs the warm-up job: it is claiming.
	var ch *child
	if xproc {
		if ch, err = startChild(ctx, p, childConfig{Mode: childChain, DSN: dsn, Jobs: chainLinks / 2, Concurrency: concurrency,
			Timeout: warmUpTimeout + latencyTimeout}); err != nil {
			return nil, err
		}
		defer ch.stop()
		if err := dispatchWarmUp(ctx, setup); err != nil {
			return nil, err
		}
		line, err := ch.next(ctx, warmUpTimeout)
		if err != nil {
			return nil, err
		}
		if line != childWarm {
			return nil, fmt.Errorf("child process said %q, want %q", tail(line), childWarm)
		}
	} else {
		warm := newLatencyRecorder(0)
		run(chainHandlerB, func(w *worker.Worker) { w.HandleJob(latencyHandler, warm.handle) })
		if err := dispatchWarmUp(ctx, setup); err != nil {
			return nil, err
		}
		if err := waitFor(ctx, warm.warm, warmUpTimeout, "the warm-up job"); err != nil {
			return nil, err
		}
	}
	reqs := make([]queuety.JobRequest, chainLinks)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: chainHandlerA, Payload: queuety.State{"i": i}}
		if i%2 == 1 {
			reqs[i].Handler = chainHandlerB
		}
	}
	if _, err := setup.Chain(reqs...).Dispatch(ctx); err != nil {
		return nil, fmt.Errorf("dispatch chain: %w", err)
	}
	if xproc {
		rep, err := ch.report(ctx, latencyTimeout)
		if err != nil {
			return nil, err
		}
		if len(rep.StartsUS) != chainLinks/2 || len(rep.EndsUS) != chainLinks/2 {
			return nil, fmt.Errorf("child process reported %d starts and %d ends, want %d", len(rep.StartsUS), len(rep.EndsUS), chainLinks/2)
		}
		links.add(rep.StartsUS, rep.EndsUS)
	}
	if err := waitFor(ctx, links.done, latencyTimeout, fmt.Sprintf("the chain's %d jobs", chainLinks)); err != nil {
		return nil, err
	}
	return links.gaps()
}

// chainRecorder is the chain jobs' handler: it works for chainWork and
// records each job's start and end time by its place in the chain, and
// closes done once n jobs ended.
type chainRecorder struct {
	mu           sync.Mutex
	n            int
	starts, ends map[int]int64 // wall-clock microseconds by place
	done         chan struct{}
}

func newChainRecorder(n int) *chainRecorder {
	return &chainRecorder{n: n, starts: map[int]int64{}, ends: map[int]int64{}, done: make(chan struct{})}
}

func (r *chainRecorder) handle(ctx context.Context, p queuety.Payload) error {
	start := time.Now().UnixMicro()
	i, ok := p.Int("i")
	if !ok {
		return queuety.NonRetryable(errors.New("bench: chain job without its place"))
	}
	if err := sleepCtx(ctx, chainWork); err != nil {
		return err
	}
	r.add(map[int]int64{int(i): start}, map[int]int64{int(i): time.Now().UnixMicro()})
	return nil
}

// add records start and end times; done is closed once n ends are
// recorded (the times a child process reports are added after that).
func (r *chainRecorder) add(starts, ends map[int]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := len(r.ends) >= r.n
	for i, us := range starts {
		r.starts[i] = us
	}
	for i, us := range ends {
		r.ends[i] = us
	}
	if !full && len(r.ends) >= r.n {
		close(r.done)
	}
}

// recorded returns the start and end times recorded so far.
func (r *chainRecorder) recorded() (starts, ends map[int]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.starts), maps.Clone(r.ends)
}

// gaps returns each link's start minus the end of the one before, in
// milliseconds.
func (r *chainRecorder) gaps() ([]float64, error) {
	starts, ends := r.recorded()
	out := make([]float64, 0, chainLinks-1)
	for i := 1; i < chainLinks; i++ {
		end, okEnd := ends[i-1]
		start, okStart := starts[i]
		if !okEnd || !okStart {
			return nil, fmt.Errorf("chain job %d did not end or %d did not start", i-1, i)
		}
		out = append(out, float64(start-end)/1000)
	}
	return out, nil
}
