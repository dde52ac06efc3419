package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// secretEqual compares a secret in constant time (also in its length:
// both sides are hashed first).
func secretEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
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

// hostAllowed is the DNS rebinding guard of an unauthenticated loopback
// listener: the Host header must name a loopback host.
func (s *server) hostAllowed(r *http.Request) bool {
	if s.opts.credentials() || s.opts.AllowUnauthenticated || !IsLoopback(s.opts.ListenAddr) {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return IsLoopback(host)
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

// authenticated reports whether the request may see the UI.
func (s *server) authenticated(r *http.Request) bool {
	o := &s.opts
	if o.open() {
		return true
	}
	if o.Token != "" {
		if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && secretEqual(strings.TrimSpace(v), o.Token) {
			return true
		}
		if c, err := r.Cookie(sessionCookie); err == nil && s.validSession(c.Value) {
			return true
		}
	}
	if o.Password != "" {
		if user, pass, ok := r.BasicAuth(); ok {
			// Both compared, always: no early exit on a wrong user name.
			u, p := secretEqual(user, o.Username), secretEqual(pass, o.Password)
			return u && p
		}
	}
	return false
}

// session returns a session cookie value valid until exp: the expiry and
// an HMAC over it and the token, so a changed token ends old sessions.
func (s *server) session(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	tok := sha256.Sum256([]byte(s.opts.Token))
	return e + "." + b64.EncodeToString(s.sign("session", e, string(tok[:])))
}

func (s *server) validSession(v string) bool {
	e, _, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(e, 10, 64)
	if err != nil || time.Now().Unix() >= unix {
		return false
	}
	return hmac.Equal([]byte(v), []byte(s.session(time.Unix(unix, 0))))
}

// unauthorized answers a request without valid credentials: 401, with
// the login form when a token is configured and a basic-auth challenge
// when a password is.
func (s *server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if s.opts.Password != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="Queuety", charset="UTF-8"`)
	}
	switch {
	case !s.opts.credentials():
		s.fail(w, r, http.StatusUnauthorized, "Authentication required: this UI has no credentials configured and is not limited to a loopback listener.")
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
		if s.authenticated(r) {
			http.Redirect(w, r, s.opts.BasePath+next, http.StatusSeeOther)
			return
		}
		s.loginForm(w, r, http.StatusOK, next, "")
	case http.MethodPost:
		if !s.checkPost(w, r, false) {
			return
		}
		next := safeNext(r.PostFormValue("next"))
		if !secretEqual(r.PostFormValue("token"), s.opts.Token) {
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

// logout ends a login session.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
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
