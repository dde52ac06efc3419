// Package ui is a web UI for operators: queues, jobs, workflows and
// schedules of a queuety store, with the actions the client offers (pause
// and resume queues, retry jobs and workflows, cancel, signal, approve,
// enable and run schedules).
//
// New (or Handler) returns an http.Handler to mount in any Go server; the
// queuety-worker command serves it with `queuety-worker ui`. Pages are
// rendered on the server with html/template; the small script and style
// sheet are embedded in the binary, so there is no build step and nothing
// is loaded from elsewhere. List pages refresh themselves every few seconds
// by fetching their own content again (the refresh can be paused).
//
// A page costs the same however large the rows and however many the
// queues: the overview reads no payload and lists at most 100 queues, the
// lists read no payload or state, and a payload, heartbeat or state is
// shown cut to 65,536 characters with a link to the whole value, which is
// streamed from the store in pieces. The lists run newest first and page
// by id from either end; a search by a filter no index serves (a time
// range, payload text) reads at most 10,000 rows a page and says so. A
// bulk action takes at most 100 rows. A workflow whose stored state cannot
// be understood is shown as its row, and an unexpected error as an id the
// log has the error under, never as the error itself.
//
// # Security
//
// New refuses options without credentials unless AllowUnauthenticated
// says so explicitly. Options.Token accepts an "Authorization: Bearer"
// header (the scheme in any case) or a login form that sets an HttpOnly,
// SameSite=Strict session cookie, which logging out revokes;
// Options.Username and Options.Password accept HTTP basic
// authentication. Secrets must be at least 16 characters and not made of
// a few characters repeated, and are compared in constant time. A request
// without valid credentials gets 401.
//
// Failed credential checks are logged (never with the secret tried) and
// throttled: each client address has five free failures, then a lockout
// that doubles with each further failure up to 15 minutes and ends on its
// own; a flood of failures from many addresses slows every check by a
// second instead of refusing it, so an attacker cannot lock an operator
// out. Behind a reverse proxy, list it in Options.TrustedProxies so that
// X-Forwarded-For names the client; otherwise every client shares the
// proxy's address.
//
// Without credentials (AllowUnauthenticated), the handler serves only
// this machine: a request must arrive on a loopback connection, name a
// loopback host (a guard against DNS rebinding) and carry no forwarding
// header (Forwarded, X-Forwarded-For, X-Real-IP, ...), which a reverse
// proxy adds; anything else gets 403 saying how to configure
// credentials. A proxy that adds no such header cannot be told apart
// from a local browser, so never put a UI without credentials behind
// one. Options.ExternalAuth lifts these checks for an application that
// authenticates every request before it reaches the handler.
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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/secret"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
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

// Options configure New and Handler. The zero value is refused: set
// credentials, or AllowUnauthenticated for a handler that only this
// machine can reach.
type Options struct {
	// Token, when set, is accepted as "Authorization: Bearer <Token>" and
	// on the login form, which sets a session cookie (SessionTTL). It must
	// be at least 16 characters with no surrounding whitespace, and not a
	// few characters repeated (a random one: openssl rand -hex 16).
	Token string
	// Username and Password, when Password is set, are accepted as HTTP
	// basic authentication. Password has Token's rules.
	Username, Password string

	// AllowUnauthenticated serves requests without credentials when none
	// are set, to this machine only: a request must come over a loopback
	// connection, name a loopback host and carry no forwarding header,
	// or it gets 403. It has no effect when credentials are set.
	AllowUnauthenticated bool
	// ExternalAuth, with AllowUnauthenticated, serves every request
	// without those checks: set it only when the application
	// authenticates every request before it reaches this handler (an
	// authenticating middleware or reverse proxy).
	ExternalAuth bool
	// ListenAddr is the address the server listens on (host:port), as the
	// queuety-worker ui command passes it. It grants nothing: with
	// AllowUnauthenticated (and no ExternalAuth), New refuses one whose
	// host is not loopback, since only this machine would be served. The
	// handler checks each connection's own addresses in any case.
	ListenAddr string
	// TrustedProxies are the addresses of reverse proxies in front of the
	// handler. The login throttle counts failures per client address;
	// for a request from one of these it takes the client's address from
	// X-Forwarded-For (the nearest entry that is not a trusted proxy).
	// Empty: the connection's remote address, which behind a proxy is the
	// proxy's for every client.
	TrustedProxies []netip.Prefix

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
	// process restarts. A logout revokes its session in this process
	// only: other replicas accept it until it expires (SessionTTL).
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

// validate reports what is wrong with the options New is given.
func (o *Options) validate() error {
	if o.Token != "" {
		if err := secret.Check("Options.Token", o.Token); err != nil {
			return fmt.Errorf("ui: %w", err)
		}
	}
	if o.Password != "" {
		if err := secret.Check("Options.Password", o.Password); err != nil {
			return fmt.Errorf("ui: %w", err)
		}
	}
	switch {
	case o.Username != "" && o.Password == "":
		return errors.New("ui: Options.Username is set without a Password")
	case !o.credentials() && !o.AllowUnauthenticated:
		return errors.New("ui: no credentials: set Options.Token (or Username and Password), " +
			"or AllowUnauthenticated for a UI that only this machine reaches")
	case !o.credentials() && !o.ExternalAuth && o.ListenAddr != "" && !IsLoopback(o.ListenAddr):
		return fmt.Errorf("ui: Options.ListenAddr %s is reachable from other machines, and AllowUnauthenticated serves "+
			"only this one: set Options.Token (or Username and Password)", o.ListenAddr)
	case o.SessionKey != nil && len(o.SessionKey) < 32:
		return fmt.Errorf("ui: Options.SessionKey has %d bytes, want at least 32", len(o.SessionKey))
	}
	return nil
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

// New returns the web UI for c as an http.Handler, configured by opts,
// or an error that says what is wrong with opts: no credentials and no
// AllowUnauthenticated, a weak Token or Password, a short SessionKey.
// Mount it at opts.BasePath:
//
//	h, err := ui.New(client, ui.Options{BasePath: "/queuety", Token: token})
//	mux.Handle("/queuety/", h)
func New(c *queuety.Client, opts Options) (http.Handler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newServer(c, opts), nil
}

// Handler is New for options known to be valid: it panics with New's
// error otherwise, as a misconfiguration found when the program starts.
func Handler(c *queuety.Client, opts Options) http.Handler {
	h, err := New(c, opts)
	if err != nil {
		panic(err)
	}
	return h
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

	throttle *throttle
	// revoked holds the sessions logged out before they expired: their
	// nonce and expiry (Unix seconds). revokedUpTo revokes every session
	// that expires at or before it (set when revoked is full).
	mu          sync.Mutex
	revoked     map[string]int64
	revokedUpTo int64
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
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand panics instead)
	}
	s := &server{c: c, opts: opts, key: key, cop: http.NewCrossOriginProtection(), ops: clientOperations(c),
		tmpl: mustTemplates(opts.Clock), log: opts.Logger, throttle: newThrottle(opts.Clock.Now),
		revoked: map[string]int64{}}
	s.routes()
	return s
}

// routes registers the pages and actions. Paths are relative to BasePath.
func (s *server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.overviewPage)
	m.HandleFunc("GET /jobs", s.jobsPage)
	m.HandleFunc("GET /jobs/{id}", s.jobPage)
	m.HandleFunc("GET /jobs/{id}/payload", s.rawValue(queuetytype.JobPayload, "job", "payload"))
	m.HandleFunc("GET /jobs/{id}/heartbeat", s.rawValue(queuetytype.JobHeartbeatData, "job", "heartbeat data"))
	m.HandleFunc("GET /workflows", s.workflowsPage)
	m.HandleFunc("GET /workflows/{id}", s.workflowPage)
	m.HandleFunc("GET /workflows/{id}/trace.json", s.workflowTrace)
	m.HandleFunc("GET /workflows/{id}/state", s.rawValue(queuetytype.WorkflowState, "workflow", "state"))
	m.HandleFunc("GET /schedules", s.schedulesPage)
	m.HandleFunc("GET /machines", s.machinesPage)     // machines.go
	m.HandleFunc("GET /machines/{id}", s.machinePage) // machines.go
	m.HandleFunc("GET /workers", s.workersPage)       // workers.go

	m.HandleFunc("POST /queues/pause", s.queueAction(true))
	m.HandleFunc("POST /queues/resume", s.queueAction(false))
	m.HandleFunc("POST /jobs/retry-buried", s.retryBuriedAction)
	m.HandleFunc("POST /jobs/bulk", s.bulkAction((*server).jobBulk))           // bulk.go
	m.HandleFunc("POST /workflows/bulk", s.bulkAction((*server).workflowBulk)) // bulk.go
	m.HandleFunc("POST /jobs/{id}/{action}", s.jobAction)
	m.HandleFunc("POST /workflows/{id}/signal", s.signalAction)
	m.HandleFunc("POST /workflows/{id}/{action}", s.workflowAction)
	m.HandleFunc("POST /schedules/{id}/{action}", s.scheduleAction)
	m.HandleFunc("POST /machines/{id}/event", s.machineEventAction)
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
	if msg := s.refuseRemote(r); msg != "" {
		s.fail(w, r, http.StatusForbidden, "%s", msg)
		return
	}
	r = s.withCSRFSeed(w, r)
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if ok, answered := s.authenticate(w, r); !ok {
		if !answered {
			s.unauthorized(w, r)
		}
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
