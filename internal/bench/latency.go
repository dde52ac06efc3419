package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// latencyHandler is the handler of the latency scenarios' jobs. Each job
// carries the wall-clock time of its Dispatch call, in microseconds since
// the Unix epoch ("t"); the warm-up job carries "warm" instead.
const latencyHandler = "bench_latency"

// latencyProbes are latency-inproc and latency-xproc: a worker with the
// default poll interval (worker.PollIntervalDefault) runs while jobs are
// dispatched one Dispatch call at a time at p.LatencyRate per second for
// p.LatencyFor; each job's latency is its handler's start time minus the
// time of its Dispatch call. latency-inproc runs the worker in this
// process, latency-xproc in a child process (both read the same host's
// wall clock). They report the p50 and p99 in milliseconds, with the poll
// interval next to them.
func latencyProbes(p Probes, cfg Config) []probe {
	n := max(1, int(float64(p.LatencyRate)*p.LatencyFor.Seconds()))
	extra := map[string]float64{
		"poll_interval_ms": ms(worker.PollIntervalDefault), "rate_per_s": float64(p.LatencyRate), "jobs": float64(n),
	}
	mk := func(name string, measure latencyMeasure) probe { return percentileProbe(name, extra, measure) }
	return []probe{
		mk("latency-inproc", func(ctx context.Context, c *queuety.Client, dsn string) ([]float64, error) {
			return latencyInProcess(ctx, c, dsn, n, p, cfg.Concurrency)
		}),
		mk("latency-xproc", func(ctx context.Context, c *queuety.Client, dsn string) ([]float64, error) {
			return latencyCrossProcess(ctx, c, dsn, n, p, cfg.Concurrency)
		}),
	}
}

// latencyMeasure runs one latency measurement on a fresh store (c, dsn)
// and returns its latencies in milliseconds.
type latencyMeasure func(ctx context.Context, c *queuety.Client, dsn string) ([]float64, error)

// percentileProbe is a probe that runs measure once a run and reports the
// p50 and p99 of its latencies as name-p50 and name-p99 (ms), with extra
// beside them.
func percentileProbe(name string, extra map[string]float64, measure latencyMeasure) probe {
	return probe{
		name:    name,
		results: []probeResult{{name + "-p50", "ms", extra}, {name + "-p99", "ms", extra}},
		run: func(ctx context.Context, env Env, rep *Report) (*probeOut, error) {
			var lat []float64
			_, err := runOnce(ctx, env, func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				var err error
				lat, err = measure(ctx, c, dsn)
				return 0, err
			}, rep)
			if err != nil {
				return nil, err
			}
			return &probeOut{values: map[string][]float64{name + "-p50": {percentile(lat, 0.50)}, name + "-p99": {percentile(lat, 0.99)}}}, nil
		},
	}
}

// latencyInProcess starts a worker on its own client in this process,
// waits until it ran a warm-up job, dispatches n jobs through setup at
// p.LatencyRate and returns their latencies in milliseconds.
func latencyInProcess(ctx context.Context, setup *queuety.Client, dsn string, n int, p Probes, concurrency int) ([]float64, error) {
	c, err := open(ctx, dsn, queuety.SkipMigrate())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rec := newLatencyRecorder(n)
	w := worker.New(c, worker.Concurrency(concurrency), worker.WithLogger(quiet()))
	w.HandleJob(latencyHandler, rec.handle)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	if err := dispatchWarmUp(ctx, setup); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, rec.warm, warmUpTimeout, "the warm-up job"); err != nil {
		return nil, err
	}
	if err := dispatchSteady(ctx, setup, n, p.LatencyRate); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, rec.done, latencyTimeout, fmt.Sprintf("%d jobs", n)); err != nil {
		return nil, err
	}
	return rec.millis(), nil
}

// latencyCrossProcess is latencyInProcess with the worker in a child
// process, which reports the latencies it saw.
func latencyCrossProcess(ctx context.Context, setup *queuety.Client, dsn string, n int, p Probes, concurrency int) ([]float64, error) {
	ch, err := startChild(ctx, p, childConfig{Mode: childLatency, DSN: dsn, Jobs: n, Concurrency: concurrency,
		Timeout: p.LatencyFor + warmUpTimeout + latencyTimeout})
	if err != nil {
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
	if err := dispatchSteady(ctx, setup, n, p.LatencyRate); err != nil {
		return nil, err
	}
	rep, err := ch.report(ctx, latencyTimeout)
	if err != nil {
		return nil, err
	}
	if len(rep.LatenciesUS) != n {
		return nil, fmt.Errorf("child process reported %d latencies, want %d", len(rep.LatenciesUS), n)
	}
	out := make([]float64, len(rep.LatenciesUS))
	for i, us := range rep.LatenciesUS {
		out[i] = float64(us) / 1000
	}
	return out, nil
}

// Bounds of the latency scenarios' waits.
const (
	warmUpTimeout  = time.Minute     // for a worker to start and run the warm-up job
	latencyTimeout = 2 * time.Minute // for the last job to start once all are dispatched
)

func dispatchWarmUp(ctx context.Context, c *queuety.Client) error {
	_, err := c.Dispatch(ctx, latencyHandler, queuety.State{"warm": true})
	return err
}

// dispatchSteady dispatches n latency jobs, one Dispatch call each, the
// i-th due i/rate seconds after the first; a dispatcher that falls behind
// catches up without pausing.
func dispatchSteady(ctx context.Context, c *queuety.Client, n, rate int) error {
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
		}
		if _, err := c.Dispatch(ctx, latencyHandler, queuety.State{"t": time.Now().UnixMicro()}); err != nil {
			return fmt.Errorf("dispatch latency job %d: %w", i, err)
		}
	}
	return nil
}

// waitFor waits until ch is closed, for at most timeout.
func waitFor(ctx context.Context, ch <-chan struct{}, timeout time.Duration, what string) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("%s did not start within %s", what, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// latencyRecorder is the latency jobs' handler: it records each job's
// start time minus its dispatch time, closes warm when the warm-up job
// runs and done when n jobs have run.
type latencyRecorder struct {
	mu       sync.Mutex
	n        int
	us       []int64
	warm     chan struct{}
	done     chan struct{}
	warmOnce sync.Once
}

func newLatencyRecorder(n int) *latencyRecorder {
	return &latencyRecorder{n: n, us: make([]int64, 0, n), warm: make(chan struct{}), done: make(chan struct{})}
}

func (r *latencyRecorder) handle(_ context.Context, p queuety.Payload) error {
	now := time.Now().UnixMicro()
	if p.Bool("warm") {
		r.warmOnce.Do(func() { close(r.warm) })
		return nil
	}
	t, ok := p.Int("t")
	if !ok {
		return queuety.NonRetryable(errors.New("bench: latency job without a dispatch time"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.us) >= r.n {
		return nil // runs beyond n are not counted
	}
	r.us = append(r.us, now-t)
	if len(r.us) == r.n {
		close(r.done)
	}
	return nil
}

// micros returns the latencies recorded so far, in microseconds.
func (r *latencyRecorder) micros() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.us...)
}

// millis returns the latencies recorded so far, in milliseconds.
func (r *latencyRecorder) millis() []float64 {
	us := r.micros()
	out := make([]float64, len(us))
	for i, v := range us {
		out[i] = float64(v) / 1000
	}
	return out
}
