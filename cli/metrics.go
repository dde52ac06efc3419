package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/queuety"
)

// metricsServer serves /metrics for `work --metrics-listen`. A nil one
// (no --metrics-listen) does nothing.
type metricsServer struct {
	m   *prom.Metrics
	srv *http.Server
	ln  net.Listener
}

// startMetrics listens on addr and serves the queuety metrics (plus the
// Go runtime's and the process's) at /metrics; "" returns nil.
func startMetrics(e *Env, addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prom.New(reg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", prom.Handler(reg))
	s := &metricsServer{m: m, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.Logger().Error("queuety: metrics server stopped", "err", err)
		}
	}()
	e.Logger().Info("queuety: serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	return s, nil
}

// option is the client option that feeds the metrics.
func (s *metricsServer) option() queuety.Option {
	if s == nil {
		return queuety.WithObserver(nil)
	}
	return queuety.WithObserver(s.m)
}

// attach adds the store gauges of c.
func (s *metricsServer) attach(c *queuety.Client) error {
	if s == nil {
		return nil
	}
	return s.m.RegisterClient(c)
}

// stop shuts the server down.
func (s *metricsServer) stop() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
