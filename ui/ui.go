// Package ui is a web UI for operators: queues, jobs, workflows and
// schedules of a queuety store, with the actions the client offers (pause
// and resume queues, retry jobs and workflows, cancel, signal, approve,
// enable and run schedules).
//
// Handler returns an http.Handler to mount in any Go server; the
// queuety-worker command serves it with `queuety-worker ui`. Pages are
// rendered on the server with html/template; the small script and style
// sheet are embedded in the binary, so there is no build step and nothing
// is loaded from elsewhere. List pages refresh themselves every few seconds
// by fetching their own content again (the refresh can be paused).
//
// # Security
//
// Every request is authenticated unless no credentials are configured and
// the handler is told that only this machine can reach it
// (Options.AllowUnauthenticated, or a loopback Options.ListenAddr).
// Options.Token accepts an "Authorization: Bearer" header or a login form
// that sets an HttpOnly, SameSite=Strict session cookie; Options.Username
// and Options.Password accept HTTP basic authentication. Secrets are
// compared in constant time. A request without valid credentials gets 401.
//
// Only POST requests change anything. Each needs the CSRF token of the
// form it came from (an HMAC of a random per-browser cookie), and a
// request that the browser marks as cross-site (Sec-Fetch-Site, or an
// Origin that is not this host) is refused with 403. With
// Options.ReadOnly the action buttons are hidden and every POST is
// refused with 403.
//
// Responses carry a Content-Security-Policy without inline script,
// X-Frame-Options DENY, X-Content-Type-Options nosniff and a
// Referrer-Policy.
package ui

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// Defaults of Options.
const (
	// RefreshIntervalDefault is how often list pages refresh themselves.
	RefreshIntervalDefault = 5 * time.Second
	// ThroughputWindowDefault is the span of the throughput columns of the
	// overview (completed log rows per queue).
	ThroughputWindowDefault = 15 * time.Minute
	// SessionTTLDefault is how long a login (Options.Token) lasts.
	SessionTTLDefault = 12 * time.Hour
)

// Options configure Handler. The zero value serves nothing but 401
// responses: set credentials, or AllowUnauthenticated for a handler that
// only this machine can reach.
type Options struct {
	// Token, when set, is accepted as "Authorization: Bearer <Token>" and
	// on the login form, which sets a session cookie (SessionTTL).
	Token string
	// Username and Password, when Password is set, are accepted as HTTP
	// basic authentication.
	Username, Password string

	// AllowUnauthenticated serves requests without credentials when none
	// are configured. Set it only when the listener is reachable from this
	// machine alone, or when a handler in front of this one authenticates.
	// It has no effect when credentials are set.
	AllowUnauthenticated bool
	// ListenAddr is the address the server listens on (host:port), as the
	// queuety-worker ui command passes it. When its host is loopback only
	// (127.0.0.0/8, ::1 or localhost) and no credentials are set, requests
	// need no authentication, and only requests whose Host header names a
	// loopback host are served (a guard against DNS rebinding). The
	// client's remote address is never used for this decision.
	ListenAddr string

	// ReadOnly hides the action buttons and refuses every POST with 403.
	ReadOnly bool
	// BasePath is the path the handler is mounted at, such as "/queuety",
	// without a trailing slash; "" for the root. The handler strips it
	// from request paths itself and puts it in front of every link.
	BasePath string

	// RefreshInterval is how often list pages refresh (default
	// RefreshIntervalDefault; negative turns the refresh off).
	RefreshInterval time.Duration
	// ThroughputWindow is the span of the overview's throughput columns
	// (default ThroughputWindowDefault, at most one hour).
	ThroughputWindow time.Duration
	// SessionTTL is how long a login lasts (default SessionTTLDefault).
	SessionTTL time.Duration
	// SessionKey signs session cookies and CSRF tokens. Give the same key
	// of at least 32 random bytes to every replica behind a load balancer;
	// by default each Handler draws its own, so logins end when the
	// process restarts.
	SessionKey []byte

	// Clock tells the time used for ages and windows (default
	// queuety.SystemClock). Pass the client's clock when it has a fake one.
	Clock queuety.Clock
	// Logger receives errors the pages could not show (default
	// slog.Default()).
	Logger *slog.Logger
}

// credentials reports whether any credentials are configured.
func (o *Options) credentials() bool { return o.Token != "" || o.Password != "" }

// open reports whether requests need no authentication.
func (o *Options) open() bool {
	return !o.credentials() && (o.AllowUnauthenticated || IsLoopback(o.ListenAddr))
}

// IsLoopback reports whether a listen address (host:port or host) can be
// reached from this machine only: its host is localhost, or an IP address
// in 127.0.0.0/8 or ::1. An empty host (":8080") listens on every
// interface and is not loopback.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns the web UI for c as an http.Handler, configured by
// opts. Mount it at opts.BasePath:
//
//	mux.Handle("/queuety/", ui.Handler(client, ui.Options{BasePath: "/queuety", Token: token}))
//
// It panics when opts.SessionKey is set but shorter than 32 bytes.
func Handler(c *queuety.Client, opts Options) http.Handler {
	return newServer(c, opts)
}

// server is the UI: routes, templates, keys.
type server struct {
	c    *queuety.Client
	opts Options
	key  []byte
	mux  *http.ServeMux
	cop  *http.CrossOriginProtection
	ops  operations
	tmpl templates
	log  *slog.Logger
}

func newServer(c *queuety.Client, opts Options) *server {
	opts.BasePath = strings.TrimRight(opts.BasePath, "/")
	if opts.BasePath != "" && !strings.HasPrefix(opts.BasePath, "/") {
		opts.BasePath = "/" + opts.BasePath
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = RefreshIntervalDefault
	}
	if opts.ThroughputWindow <= 0 {
		opts.ThroughputWindow = ThroughputWindowDefault
	}
	opts.ThroughputWindow = min(opts.ThroughputWindow.Truncate(time.Minute), time.Hour)
	if opts.ThroughputWindow < time.Minute {
		opts.ThroughputWindow = time.Minute
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = SessionTTLDefault
	}
	if opts.Clock == nil {
		opts.Clock = queuety.SystemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	key := opts.SessionKey
	switch {
	case key == nil:
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand panics instead)
	case len(key) < 32:
		panic(fmt.Sprintf("ui: Options.SessionKey has %d bytes, want at least 32", len(key)))
	}
	s := &server{c: c, opts: opts, key: key, cop: http.NewCrossOriginProtection(), ops: clientOperations(c),
		tmpl: mustTemplates(opts.Clock), log: opts.Logger}
	s.routes()
	return s
}

// routes registers the pages and actions. Paths are relative to BasePath.
func (s *server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.overviewPage)
	m.HandleFunc("GET /jobs", s.jobsPage)
	m.HandleFunc("GET /jobs/{id}", s.jobPage)
	m.HandleFunc("GET /jobs/{id}/payload", s.rawValue(driver.JobPayload, "job", "payload"))
	m.HandleFunc("GET /jobs/{id}/heartbeat", s.rawValue(driver.JobHeartbeatData, "job", "heartbeat data"))
	m.HandleFunc("GET /workflows", s.workflowsPage)
	m.HandleFunc("GET /workflows/{id}", s.workflowPage)
	m.HandleFunc("GET /workflows/{id}/trace.json", s.workflowTrace)
	m.HandleFunc("GET /workflows/{id}/state", s.rawValue(driver.WorkflowState, "workflow", "state"))
	m.HandleFunc("GET /schedules", s.schedulesPage)

	m.HandleFunc("POST /queues/pause", s.queueAction(true))
	m.HandleFunc("POST /queues/resume", s.queueAction(false))
	m.HandleFunc("POST /jobs/retry-buried", s.retryBuriedAction)
	m.HandleFunc("POST /jobs/{id}/{action}", s.jobAction)
	m.HandleFunc("POST /workflows/{id}/signal", s.signalAction)
	m.HandleFunc("POST /workflows/{id}/{action}", s.workflowAction)
	m.HandleFunc("POST /schedules/{id}/{action}", s.scheduleAction)
	m.HandleFunc("POST /logout", s.logout)
	s.mux = m
}

// route serves a request with the mux, and renders the error page when
// no route matches: 404, or 405 for a path that exists with another
// method (GET on an action).
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	if h, pattern := s.mux.Handler(r); pattern == "" {
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if probe.status == http.StatusMethodNotAllowed {
			s.fail(w, r, probe.status, "Method %s is not allowed at %s: actions are POST requests from this UI's forms.", r.Method, r.URL.Path)
			return
		}
		s.fail(w, r, http.StatusNotFound, "There is no page at %s.", r.URL.Path)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// statusProbe records what the mux's own 404 and 405 handlers answer.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(status int)      { p.status = status }

// ServeHTTP applies the security headers, strips BasePath, serves the
// assets and the login form, authenticates, checks state-changing
// requests, and routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			id := s.logFailure(r, "ui: panic serving a request", fmt.Errorf("panic: %v", v))
			s.fail(w, r, http.StatusInternalServerError, "Internal error: the request could not be served. The server's log has the details under error id %s.", id)
		}
	}()
	r, ok := s.stripBase(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/static/") {
		s.static(w, r)
		return
	}
	if !s.hostAllowed(r) {
		s.fail(w, r, http.StatusForbidden, "This UI serves only requests for a loopback host name, not %q.", r.Host)
		return
	}
	r = s.withCSRFSeed(w, r)
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if !s.authenticated(r) {
		s.unauthorized(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !s.checkPost(w, r, r.URL.Path != "/logout") {
			return
		}
	}
	s.route(w, r)
}

// stripBase removes BasePath from the request path; false when the path
// lies outside it.
func (s *server) stripBase(r *http.Request) (*http.Request, bool) {
	base := s.opts.BasePath
	if base == "" {
		return r, true
	}
	p := r.URL.Path
	if p == base {
		p = "/"
	} else if rest, ok := strings.CutPrefix(p, base+"/"); ok {
		p = "/" + rest
	} else {
		return r, false
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = p, ""
	r2.URL = &u
	return r2, true
}

// securityHeaders sets the headers every response carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
