package ui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
)

// TestNewRefusesBadOptions checks that options without credentials or an
// explicit opt-in, and weak secrets, are refused with a clear error, and
// that Handler panics with it.
func TestNewRefusesBadOptions(t *testing.T) {
	c := openStore(t, "sqlite")
	for _, bad := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no credentials"},
		{Options{ListenAddr: "127.0.0.1:8080"}, "no credentials"},
		{Options{Token: "a"}, "at least 16"},
		{Options{Token: " "}, "whitespace"},
		{Options{Token: "                    "}, "whitespace"},
		{Options{Token: " " + testToken}, "whitespace"},
		{Options{Token: "s3cret"}, "at least 16"},
		{Options{Token: strings.Repeat("a", 40)}, "too few characters"},
		{Options{Token: strings.Repeat("ab", 12)}, "too few characters"},
		{Options{Username: "ops", Password: "secret"}, "Options.Password has 6 characters"},
		{Options{Username: "ops"}, "without a Password"},
		{Options{AllowUnauthenticated: true, ListenAddr: "0.0.0.0:8080"}, "reachable from other machines"},
		{Options{Token: testToken, SessionKey: []byte("short")}, "SessionKey has 5 bytes"},
	} {
		h, err := New(c, bad.o)
		assert.Nil(t, h)
		if assert.Error(t, err, "%+v", bad.o) {
			assert.Contains(t, err.Error(), bad.want, "%+v", bad.o)
			if len(bad.o.Token) > 5 {
				assert.NotContains(t, err.Error(), bad.o.Token, "the error does not repeat the token")
			}
		}
		assert.PanicsWithError(t, err.Error(), func() { Handler(c, bad.o) })
	}
	for _, good := range []Options{
		{Token: testToken},
		{Token: "correct horse battery staple"},
		{Username: "ops", Password: "7f3c9e21a0b84d56"},
		{AllowUnauthenticated: true},
		{AllowUnauthenticated: true, ListenAddr: "[::1]:8080"},
		{AllowUnauthenticated: true, ExternalAuth: true, ListenAddr: ":8080"},
	} {
		_, err := New(c, good)
		assert.NoError(t, err, "%+v", good)
	}
}

// serve runs one request through h as a server with the given local
// address would, with the remote address and headers set.
func serve(h http.Handler, local net.Addr, remote, host string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr, req.Host = remote, host
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if local != nil {
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestNoCredentialsServesThisMachineOnly checks that a UI without
// credentials refuses, with a message saying how to configure them,
// requests that came through a proxy or over a connection that is not
// local, whatever ListenAddr says, and that ExternalAuth lifts the checks.
func TestNoCredentialsServesThisMachineOnly(t *testing.T) {
	c := openStore(t, "sqlite")
	h := Handler(c, Options{AllowUnauthenticated: true, ListenAddr: "127.0.0.1:8080", Logger: quiet()})
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	res := serve(h, loop, "127.0.0.1:50000", "127.0.0.1:8080", nil)
	require.Equal(t, http.StatusOK, res.Code, "a local browser")
	res = serve(h, &net.UnixAddr{Name: "/run/queuety.sock", Net: "unix"}, "@", "localhost", nil)
	assert.Equal(t, http.StatusOK, res.Code, "a Unix socket")

	// A reverse proxy on this machine that passes the Host on as
	// 127.0.0.1 (nginx's default) but adds a forwarding header.
	for _, hdr := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Host"} {
		res = serve(h, loop, "127.0.0.1:50000", "127.0.0.1:8080", http.Header{hdr: {"203.0.113.9"}})
		assert.Equal(t, http.StatusForbidden, res.Code, hdr)
		assert.Contains(t, res.Body.String(), "came through a proxy", hdr)
		assert.Contains(t, res.Body.String(), "--token", hdr)
	}
	// ListenAddr says loopback, but the server listens on every interface
	// and the request came over the network with a loopback Host.
	res = serve(h, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}, "198.51.100.7:40000", "127.0.0.1:8080", nil)
	assert.Equal(t, http.StatusForbidden, res.Code, "a connection to a public address")
	assert.Contains(t, res.Body.String(), "only connections from this machine")
	res = serve(h, loop, "198.51.100.7:40000", "127.0.0.1:8080", nil)
	assert.Equal(t, http.StatusForbidden, res.Code, "a remote peer")

	ext := Handler(c, Options{AllowUnauthenticated: true, ExternalAuth: true, Logger: quiet()})
	res = serve(ext, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 8080}, "10.0.0.1:40000", "ops.example",
		http.Header{"X-Forwarded-For": {"203.0.113.9"}})
	assert.Equal(t, http.StatusOK, res.Code, "ExternalAuth: the application authenticates")
}

// TestBearerSchemeAnyCase checks that the Bearer scheme is matched
// without regard to case (RFC 7235).
func TestBearerSchemeAnyCase(t *testing.T) {
	c := openStore(t, "sqlite")
	b := newBrowser(t, Handler(c, Options{Token: testToken, Logger: quiet()}))
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		res := b.do(http.MethodGet, "/", nil, http.Header{"Authorization": {scheme + " " + testToken}})
		assert.Equal(t, http.StatusOK, res.StatusCode, scheme)
	}
	assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, http.Header{"Authorization": {"Token " + testToken}}).StatusCode)
}

// TestLogoutRevokesSession checks that a session cookie kept from before
// a logout no longer works.
func TestLogoutRevokesSession(t *testing.T) {
	c := openStore(t, "sqlite")
	h := Handler(c, Options{Token: testToken, Logger: quiet()})
	b := newBrowser(t, h)
	res := b.post("/login", url.Values{"token": {testToken}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	var kept string
	for _, ck := range res.Cookies() {
		if ck.Name == sessionCookie {
			kept = ck.Value
		}
	}
	require.NotEmpty(t, kept)
	withKept := func() int {
		other := newBrowser(t, h)
		return other.do(http.MethodGet, "/", nil, http.Header{"Cookie": {sessionCookie + "=" + kept}}).StatusCode
	}
	require.Equal(t, http.StatusOK, withKept(), "the session works before the logout")
	require.Equal(t, http.StatusSeeOther, b.post("/logout", nil).StatusCode)
	assert.Equal(t, http.StatusUnauthorized, withKept(), "a copy of the cookie after the logout")

	// A second login gets a new session, which works.
	b2 := newBrowser(t, h)
	require.Equal(t, http.StatusSeeOther, b2.post("/login", url.Values{"token": {testToken}}).StatusCode)
	assert.Equal(t, http.StatusOK, b2.get("/").StatusCode)
}

// TestLoginThrottle checks the per-client lockout (free failures, then a
// lockout that doubles up to its cap and ends on its own, refusing even
// the right token meanwhile, and never another client), that failures are
// logged without the secret tried, and that the login form and basic
// authentication are throttled the same way.
func TestLoginThrottle(t *testing.T) {
	c := openStore(t, "sqlite")
	clock := queuety.NewFakeClock(time.Now())
	log, logs := logTo()
	h := Handler(c, Options{Token: testToken, Clock: clock, Logger: log})
	local := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
	try := func(client, tok string) *httptest.ResponseRecorder {
		return serve(h, local, client+":40000", "ops.example", bearer(tok))
	}
	const attacker, operator = "198.51.100.7", "203.0.113.20"
	for i := range freeFailures {
		assert.Equal(t, http.StatusUnauthorized, try(attacker, fmt.Sprintf("guess-%d", i)).Code, "free failure %d", i+1)
	}
	assert.Equal(t, http.StatusOK, try(attacker, testToken).Code, "the right token within the free failures")
	for i := range freeFailures + 1 {
		assert.Equal(t, http.StatusUnauthorized, try(attacker, fmt.Sprintf("guess-%d", i)).Code, "failure %d after a success", i+1)
	}
	res := try(attacker, testToken)
	assert.Equal(t, http.StatusTooManyRequests, res.Code, "locked out: even the right token is refused")
	assert.Equal(t, "1", res.Header().Get("Retry-After"))
	assert.Contains(t, res.Body.String(), "Too many failed logins from your address")
	assert.Equal(t, http.StatusOK, try(operator, testToken).Code, "another address is not locked out")

	clock.Advance(1100 * time.Millisecond)
	assert.Equal(t, http.StatusUnauthorized, try(attacker, "guess-again").Code, "the lockout ended")
	assert.Equal(t, "2", try(attacker, testToken).Header().Get("Retry-After"), "the next lockout is twice as long")
	// Keep failing: the lockout doubles up to maxLockout and no further.
	var last time.Duration
	for range 20 {
		s := h.(*server)
		wait := s.throttle.lockedOut(attacker)
		clock.Advance(wait + time.Millisecond)
		require.Equal(t, http.StatusUnauthorized, try(attacker, "guess").Code)
		last = s.throttle.lockedOut(attacker)
	}
	assert.Equal(t, maxLockout, last, "the longest lockout")
	clock.Advance(maxLockout)
	assert.Equal(t, http.StatusOK, try(attacker, testToken).Code, "after the longest lockout, the right token works again")

	out := logs.String()
	assert.Contains(t, out, "ui: failed login")
	assert.Contains(t, out, "client="+attacker)
	assert.Contains(t, out, "locked_out_for=15m0s")
	assert.NotContains(t, out, "guess", "the tokens tried are not logged")

	// The login form and basic authentication count the same way.
	b := newBrowser(t, Handler(c, Options{Token: testToken, Logger: quiet()}))
	for range freeFailures + 1 {
		require.Equal(t, http.StatusUnauthorized, b.post("/login", url.Values{"token": {"nope"}}).StatusCode)
	}
	res2 := b.post("/login", url.Values{"token": {testToken}})
	assert.Equal(t, http.StatusTooManyRequests, res2.StatusCode, "the login form after six failures")
	assert.Contains(t, res2.body, "Too many failed logins")
	const pass = "7f3c9e21a0b84d56"
	hb := Handler(c, Options{Username: "ops", Password: pass, Logger: quiet()})
	for range freeFailures + 1 {
		require.Equal(t, http.StatusUnauthorized, serve(hb, local, attacker+":1", "ops.example", basic("ops", "nope")).Code)
	}
	assert.Equal(t, http.StatusTooManyRequests, serve(hb, local, attacker+":1", "ops.example", basic("ops", pass)).Code)
	assert.Equal(t, http.StatusOK, serve(hb, local, operator+":1", "ops.example", basic("ops", pass)).Code)
}

// TestLoginThrottleGlobal checks that failures from many addresses slow
// every credential check instead of refusing it: the operator, from an
// address of its own, still gets in.
func TestLoginThrottleGlobal(t *testing.T) {
	c := openStore(t, "sqlite")
	clock := queuety.NewFakeClock(time.Now())
	h := Handler(c, Options{Token: testToken, Clock: clock, Logger: quiet()})
	s := h.(*server)
	s.throttle.delay = 100 * time.Millisecond
	local := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
	for i := range globalFailures + 10 {
		res := serve(h, local, fmt.Sprintf("198.51.%d.%d:4000", i/200, i%200+1), "ops.example", bearer("guess"))
		require.Equal(t, http.StatusUnauthorized, res.Code)
	}
	require.True(t, s.throttle.underAttack(), "the global allowance is spent")
	start := time.Now()
	res := serve(h, local, "203.0.113.20:4000", "ops.example", bearer(testToken))
	assert.Equal(t, http.StatusOK, res.Code, "the operator gets in")
	assert.GreaterOrEqual(t, time.Since(start), s.throttle.delay, "slowed while failures flood in")

	// More checks at once than may wait are refused for a moment, not
	// locked out.
	s.throttle.delay = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range maxSlowed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
			req.RemoteAddr, req.Host, req.Header = "198.51.100.99:1", "ops.example", bearer("guess")
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
	}
	require.Eventually(t, func() bool { return len(s.throttle.slowed) == maxSlowed }, 10*time.Second, time.Millisecond)
	res = serve(h, local, "203.0.113.21:4000", "ops.example", bearer(testToken))
	assert.Equal(t, http.StatusTooManyRequests, res.Code)
	assert.Equal(t, "1", res.Header().Get("Retry-After"))
	cancel()
	wg.Wait()

	// The allowance refills with time.
	clock.Advance(time.Minute)
	assert.False(t, s.throttle.underAttack(), "a minute later")
}

// TestClientKey checks whose address the throttle counts: the remote
// address, an IPv6 /64, and X-Forwarded-For only from a trusted proxy.
func TestClientKey(t *testing.T) {
	c := openStore(t, "sqlite")
	key := func(o Options, remote string, xff ...string) string {
		o.Token, o.Logger = testToken, quiet()
		s := newServer(c, o)
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		for _, v := range xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		return s.clientKey(req)
	}
	proxy := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	assert.Equal(t, "198.51.100.7", key(Options{}, "198.51.100.7:1"))
	assert.Equal(t, "2001:db8:1:2::/64", key(Options{}, "[2001:db8:1:2:aaaa::1]:1"))
	assert.Equal(t, "10.0.0.5", key(Options{}, "10.0.0.5:1", "198.51.100.7"), "an untrusted proxy's header is ignored")
	assert.Equal(t, "198.51.100.7", key(Options{TrustedProxies: proxy}, "10.0.0.5:1", "198.51.100.7"))
	assert.Equal(t, "198.51.100.7", key(Options{TrustedProxies: proxy}, "10.0.0.5:1", "203.0.113.1, 198.51.100.7, 10.0.0.9"),
		"the nearest address that is not a trusted proxy; the client's own claims are not believed")
	assert.Equal(t, "198.51.100.8", key(Options{TrustedProxies: proxy}, "198.51.100.8:1", "203.0.113.1"), "a direct client")
}
