package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queuety/queuety-go/internal/secret"
	"github.com/queuety/queuety-go/metrics/prom"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/ui"
)

// metricsServer serves /metrics for `work --metrics-listen`. A nil one
// (no --metrics-listen) does nothing.
type metricsServer struct {
	m   *prom.Metrics
	srv *http.Server
	ln  net.Listener
}

// metricsWriteTimeout bounds the writing of one scrape's response.
const metricsWriteTimeout = 30 * time.Second

// metricsAuth is the authentication /metrics requires: a bearer token,
// or a user name and password (basic authentication), or nothing.
type metricsAuth struct {
	token, user, pass string
}

func (a metricsAuth) none() bool { return a.token == "" && a.pass == "" }

// wrap answers 401 to a request without the configured credentials.
// Secrets are compared in constant time.
func (a metricsAuth) wrap(h http.Handler) http.Handler {
	if a.none() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		if a.token != "" {
			scheme, cred, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
			ok = found && strings.EqualFold(scheme, "Bearer") && secret.Equal(strings.TrimSpace(cred), a.token)
		} else if user, pass, found := r.BasicAuth(); found {
			u, p := secret.Equal(user, a.user), secret.Equal(pass, a.pass)
			ok = u && p
		}
		if !ok {
			if a.token != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="Queuety metrics"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Basic realm="Queuety metrics", charset="UTF-8"`)
			}
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// startMetrics listens on addr and serves the queuety metrics (plus the
// Go runtime's and the process's) at /metrics, behind auth; "" returns
// nil. Without auth on an address other machines can reach, it logs a
// warning: the metrics name every queue and handler.
func startMetrics(e *Env, addr string, auth metricsAuth) (*metricsServer, error) {
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
	mux.Handle("/metrics", auth.wrap(prom.Handler(reg)))
	s := &metricsServer{m: m, ln: ln, srv: newHTTPServer(mux, metricsWriteTimeout)}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.Logger().Error("queuety: metrics server stopped", "err", err)
		}
	}()
	e.Logger().Info("queuety: serving metrics", "addr", ln.Addr().String(), "path", "/metrics", "auth", !auth.none())
	if auth.none() && !ui.IsLoopback(addr) {
		e.Logger().Warn("queuety: /metrics is served without authentication on an address other machines can reach; "+
			"give --metrics-token (or $"+EnvMetricsToken+") or --metrics-basic-auth, or listen on 127.0.0.1", "addr", ln.Addr().String())
	}
	return s, nil
}

// readMetricsAuth reads the credentials of /metrics from the work
// command's flags and the environment.
func readMetricsAuth(e *Env, token, basic *secretFlag) (metricsAuth, error) {
	var a metricsAuth
	var err error
	if a.token, err = token.read(e); err != nil {
		return a, err
	}
	b, err := basic.read(e)
	if err != nil {
		return a, err
	}
	switch {
	case a.token != "" && b != "":
		return a, Usagef("give a metrics token or metrics basic authentication, not both")
	case a.token != "":
		return a, checkToken("the metrics token", a.token)
	case b != "":
		a.user, a.pass, err = splitBasicAuth("--metrics-basic-auth", b)
	}
	return a, err
}

// observer is the observer that feeds the metrics (nil for none).
func (s *metricsServer) observer() observe.Observer {
	if s == nil {
		return nil
	}
	return s.m
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
