package bench

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuety"
)

// rssProbe is rss-drain-1w: the peak resident set (VmHWM), in MiB, of a
// worker process that drains cfg.Jobs no-op jobs as drain-1w does (one
// worker, cfg.Concurrency handlers, 10 ms poll, no maintenance). The jobs
// are dispatched from this process before the child starts, so the
// figure is the worker's alone. It is nil where /proc/self/status cannot
// be read (not Linux).
func rssProbe(p Probes, cfg Config) *probe {
	if _, err := peakRSS(); err != nil {
		return nil
	}
	const name = "rss-drain-1w"
	return &probe{
		name:    name,
		results: []probeResult{{name, "MiB", map[string]float64{"jobs": float64(cfg.Jobs), "concurrency": float64(cfg.Concurrency)}}},
		run: func(ctx context.Context, env Env, rep *Report) (*probeOut, error) {
			var mib float64
			_, err := runOnce(ctx, env, func(ctx context.Context, c *queuety.Client, dsn string) (float64, error) {
				if err := dispatchAll(ctx, c, noopRequests(cfg.Jobs)); err != nil {
					return 0, err
				}
				ch, err := startChild(ctx, p, childConfig{Mode: childDrain, DSN: dsn, Jobs: cfg.Jobs, Concurrency: cfg.Concurrency,
					Timeout: drainTimeout})
				if err != nil {
					return 0, err
				}
				defer ch.stop()
				r, err := ch.report(ctx, drainTimeout)
				if err != nil {
					return 0, err
				}
				mib = float64(r.PeakRSSKiB) / 1024
				return mib, nil
			}, rep)
			if err != nil {
				return nil, err
			}
			return &probeOut{values: map[string][]float64{name: {mib}}}, nil
		},
	}
}

// drainTimeout bounds a child process's drain, as runWorkers bounds the
// in-process ones.
const drainTimeout = 10 * time.Minute
