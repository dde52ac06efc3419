package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/secret"
)

// Cookie names.
const (
	sessionCookie = "queuety_ui_session"
	csrfCookie    = "queuety_ui_csrf"
	flashCookie   = "queuety_ui_flash"
)

// maxFormBytes bounds the body of a POST (a signal payload included).
const maxFormBytes = 1 << 20

type ctxKey int

const csrfSeedKey ctxKey = iota

var b64 = base64.RawURLEncoding

// sign returns the HMAC-SHA256 of the parts under the server's key.
func (s *server) sign(parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// cookie returns a cookie scoped to the UI: HttpOnly, SameSite=Strict,
// and Secure when the request came over TLS.
func (s *server) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	path := s.opts.BasePath
	if path == "" {
		path = "/"
	}
	return &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// forwardingHeaders are the request headers a reverse proxy adds, which
// no browser sends by itself.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
	"X-Forwarded-Server", "X-Real-IP", "X-Client-IP", "True-Client-IP", "CF-Connecting-IP", "Fastly-Client-IP", "Via"}

// refuseRemote is the guard of a handler without credentials: it serves
// this machine only. It returns why a request is refused, or "" to serve
// it: a request must carry no forwarding header (a reverse proxy on this
// machine would otherwise pass the internet's requests on as local
// ones), come over a loopback connection (whatever Options.ListenAddr
// says) and name a loopback host (a guard against DNS rebinding).
func (s *server) refuseRemote(r *http.Request) string {
	o := &s.opts
	if o.credentials() || o.ExternalAuth {
		return ""
	}
	const configure = " Give the UI credentials to serve it to other machines or through a proxy: " +
		"queuety-worker ui --token (or --basic-auth), or Options.Token (or Username and Password)."
	for _, h := range forwardingHeaders {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			return "This UI has no credentials, so it serves only browsers on this machine, and this request came " +
				"through a proxy (it carries a " + h + " header)." + configure
		}
	}
	if !localConnection(r) {
		return "This UI has no credentials, so it serves only connections from this machine." + configure
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !IsLoopback(host) {
		return fmt.Sprintf("This UI has no credentials, so it serves only requests for a loopback host name "+
			"(localhost, 127.0.0.1, [::1]), not %q.", r.Host) + configure
	}
	return ""
}

// localConnection reports whether the request came over a connection
// between two loopback addresses, or over a Unix socket.
func localConnection(r *http.Request) bool {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		switch a := la.(type) {
		case *net.UnixAddr:
			return true
		case *net.TCPAddr:
			if !a.IP.IsLoopback() {
				return false
			}
		default:
			if !IsLoopback(a.String()) {
				return false
			}
		}
	}
	a := remoteIP(r)
	return a.IsValid() && a.IsLoopback()
}

// withCSRFSeed makes sure the browser has a CSRF cookie, a random value
// the CSRF tokens of this browser's forms are signed from, and puts it in
// the request's context.
func (s *server) withCSRFSeed(w http.ResponseWriter, r *http.Request) *http.Request {
	seed := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		if _, err := b64.DecodeString(c.Value); err == nil {
			seed = c.Value
		}
	}
	if seed == "" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		seed = b64.EncodeToString(b)
		http.SetCookie(w, s.cookie(r, csrfCookie, seed, 0))
	}
	return r.WithContext(context.WithValue(r.Context(), csrfSeedKey, seed))
}

// csrfToken is the token this browser's forms carry.
func (s *server) csrfToken(r *http.Request) string {
	seed, _ := r.Context().Value(csrfSeedKey).(string)
	return b64.EncodeToString(s.sign("csrf", seed))
}

// checkPost refuses a state-changing request that is cross-site, lacks
// its CSRF token, or (with enforceReadOnly) arrives at a read-only UI. It
// writes the 403 response and returns false.
func (s *server) checkPost(w http.ResponseWriter, r *http.Request, enforceReadOnly bool) bool {
	if err := s.cop.Check(r); err != nil {
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused: actions must come from this UI's own pages.")
		return false
	}
	if enforceReadOnly && s.opts.ReadOnly {
		s.fail(w, r, http.StatusForbidden, "This UI is read-only: actions are disabled.")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	token := r.PostFormValue("csrf")
	if token == "" {
		token = r.Header.Get("X-CSRF-Token")
	}
	got, err := b64.DecodeString(token)
	if err != nil || !hmac.Equal(got, s.sign("csrf", r.Context().Value(csrfSeedKey).(string))) {
		s.fail(w, r, http.StatusForbidden, "Missing or invalid CSRF token: reload the page and try again.")
		return false
	}
	return true
}

// authenticate checks the request's credentials: a session cookie, or a
// bearer token or basic authentication, which are throttled per client
// (throttle.go) and logged when wrong. It reports whether the request may
// see the UI; answered says it has already written the refusal (429).
func (s *server) authenticate(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	o := &s.opts
	if !o.credentials() {
		return true, false // AllowUnauthenticated: refuseRemote checked the connection
	}
	if o.Token != "" {
		if c, err := r.Cookie(sessionCookie); err == nil && s.validSession(c.Value) {
			return true, false
		}
	}
	var method string
	var check func() bool
	if scheme, cred, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); found && o.Token != "" &&
		strings.EqualFold(scheme, "Bearer") {
		method, check = "bearer token", func() bool { return secret.Equal(strings.TrimSpace(cred), o.Token) }
	} else if user, pass, found := r.BasicAuth(); found && o.Password != "" {
		method, check = "basic authentication", func() bool {
			// Both compared, always: no early exit on a wrong user name.
			u, p := secret.Equal(user, o.Username), secret.Equal(pass, o.Password)
			return u && p
		}
	} else {
		return false, false
	}
	return s.checkThrottled(w, r, method, check)
}

// checkThrottled runs a credential check under the login throttle: a
// locked-out client gets 429 without a check, a check waits while
// failures flood in, a failure is counted and logged, a success clears
// the client's count.
func (s *server) checkThrottled(w http.ResponseWriter, r *http.Request, method string, check func() bool) (ok, answered bool) {
	client := s.clientKey(r)
	if wait := s.throttle.lockedOut(client); wait > 0 {
		s.tooMany(w, r, wait, "Too many failed logins from your address: try again in %s.", formatDuration(wait+time.Second-1))
		return false, true
	}
	if !s.throttle.slow(r.Context()) {
		s.tooMany(w, r, time.Second, "Too many failed logins from many addresses: try again in a moment.")
		return false, true
	}
	if check() {
		s.throttle.succeed(client)
		return true, false
	}
	n, lock := s.throttle.fail(client)
	// The secret tried is never logged, nor a user name (often a password
	// typed into the wrong field).
	s.log.Warn("ui: failed login", "client", client, "remote_addr", r.RemoteAddr, "method", method,
		"failures", n, "locked_out_for", lock.String())
	return false, false
}

// tooMany answers 429 with a Retry-After header.
func (s *server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration, format string, args ...any) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	s.fail(w, r, http.StatusTooManyRequests, format, args...)
}

// session returns a new session cookie value valid until exp: the
// expiry, a random nonce (which logging out revokes) and an HMAC over
// both and the token, so a changed token ends old sessions.
func (s *server) session(exp time.Time) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return s.sessionValue(strconv.FormatInt(exp.Unix(), 10), b64.EncodeToString(b))
}

func (s *server) sessionValue(exp, nonce string) string {
	tok := sha256.Sum256([]byte(s.opts.Token))
	return exp + "." + nonce + "." + b64.EncodeToString(s.sign("session", exp, nonce, string(tok[:])))
}

// parseSession checks a session cookie value's signature and expiry and
// returns its nonce and expiry; ok is false for a forged, expired or
// revoked session.
func (s *server) parseSession(v string) (nonce string, exp int64, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", 0, false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || time.Now().Unix() >= exp || !hmac.Equal([]byte(v), []byte(s.sessionValue(parts[0], parts[1]))) {
		return "", 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, gone := s.revoked[parts[1]]; gone || exp <= s.revokedUpTo {
		return "", 0, false
	}
	return parts[1], exp, true
}

func (s *server) validSession(v string) bool {
	_, _, ok := s.parseSession(v)
	return ok
}

// maxRevoked bounds the revoked sessions kept until they expire; past it,
// every session issued so far is revoked at once (their users log in
// again) and the list starts over.
const maxRevoked = 10000

// revoke ends a session before its expiry.
func (s *server) revoke(nonce string, exp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Unix()
	if len(s.revoked) >= maxRevoked {
		for n, e := range s.revoked {
			if e <= now {
				delete(s.revoked, n)
			}
		}
	}
	if len(s.revoked) >= maxRevoked {
		s.revokedUpTo = time.Now().Add(s.opts.SessionTTL).Unix()
		clear(s.revoked)
		return
	}
	s.revoked[nonce] = exp
}

// unauthorized answers a request without valid credentials: 401, with
// the login form when a token is configured and a basic-auth challenge
// when a password is.
func (s *server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if s.opts.Password != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="Queuety", charset="UTF-8"`)
	}
	switch {
	case s.opts.Token != "" && r.Method == http.MethodGet && !isPartial(r):
		s.loginForm(w, r, http.StatusUnauthorized, r.URL.RequestURI(), "")
	default:
		s.fail(w, r, http.StatusUnauthorized, "Authentication required.")
	}
}

// login serves the login form (GET) and checks it (POST).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token == "" {
		s.fail(w, r, http.StatusNotFound, "There is no login form: this UI is not configured with a token.")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		next := safeNext(r.URL.Query().Get("next"))
		if c, err := r.Cookie(sessionCookie); err == nil && s.validSession(c.Value) {
			http.Redirect(w, r, s.opts.BasePath+next, http.StatusSeeOther)
			return
		}
		s.loginForm(w, r, http.StatusOK, next, "")
	case http.MethodPost:
		if !s.checkPost(w, r, false) {
			return
		}
		next := safeNext(r.PostFormValue("next"))
		token := r.PostFormValue("token")
		ok, answered := s.checkThrottled(w, r, "login form", func() bool { return secret.Equal(token, s.opts.Token) })
		if answered {
			return
		}
		if !ok {
			s.loginForm(w, r, http.StatusUnauthorized, next, "Wrong token.")
			return
		}
		http.SetCookie(w, s.cookie(r, sessionCookie, s.session(time.Now().Add(s.opts.SessionTTL)), int(s.opts.SessionTTL.Seconds())))
		http.Redirect(w, r, s.opts.BasePath+next, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "Method %s is not allowed here.", r.Method)
	}
}

// logout ends a login session: the cookie is cleared and the session
// revoked, so a copy of the cookie no longer works either.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if nonce, exp, ok := s.parseSession(c.Value); ok {
			s.revoke(nonce, exp)
		}
	}
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, s.opts.BasePath+"/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target inside the UI: a path (with an
// optional query) that starts with one slash, without backslashes or
// control characters (which browsers drop or read as slashes), or "/".
func safeNext(next string) string {
	bad := !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if !bad {
		u, err := url.Parse(next)
		bad = err != nil || u.Scheme != "" || u.Host != "" || u.Path == "/login"
	}
	if bad {
		return "/"
	}
	return next
}

// setFlash leaves a one-time message for the next page, signed so that
// nobody else can put words there.
func (s *server) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	if len(msg) > 500 {
		msg = msg[:500]
	}
	v := b64.EncodeToString([]byte(msg)) + "." + b64.EncodeToString(s.sign("flash", msg))
	http.SetCookie(w, s.cookie(r, flashCookie, v, 60))
}

// takeFlash returns the message setFlash left, and clears it.
func (s *server) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, s.cookie(r, flashCookie, "", -1))
	m, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return ""
	}
	msg, err1 := b64.DecodeString(m)
	got, err2 := b64.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(got, s.sign("flash", string(msg))) {
		return ""
	}
	return string(msg)
}
