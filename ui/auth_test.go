package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:1": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST": true, "::1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.4:8080": false, "example.com:80": false, "": false,
	} {
		assert.Equal(t, want, IsLoopback(addr), addr)
	}
}

// TestAuthentication checks who gets in under each configuration.
func TestAuthentication(t *testing.T) {
	c := openStore(t, "sqlite")

	t.Run("no credentials on this machine", func(t *testing.T) {
		b := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, ListenAddr: "127.0.0.1:8080", Logger: quiet()}))
		assert.Equal(t, http.StatusOK, b.get("/").StatusCode) // httptest's Host is 127.0.0.1:port
		// A DNS-rebound name pointing at 127.0.0.1 is not served.
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
		require.NoError(t, err)
		req.Host = "attacker.example:8080"
		raw, err := b.hc.Do(req)
		require.NoError(t, err)
		raw.Body.Close()
		assert.Equal(t, http.StatusForbidden, raw.StatusCode)
	})

	t.Run("token", func(t *testing.T) {
		// Credentials win over AllowUnauthenticated: they are always required once set.
		b := newBrowser(t, Handler(c, Options{Token: testToken, AllowUnauthenticated: true, Logger: quiet()}))
		res := b.get("/jobs")
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.Contains(t, res.body, `id="login"`, "the login form")
		assert.Empty(t, res.Header.Get("WWW-Authenticate"))
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, bearer("wrong")).StatusCode)
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, bearer("")).StatusCode)
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, basic("admin", testToken)).StatusCode)
		assert.Equal(t, http.StatusOK, b.do(http.MethodGet, "/", nil, bearer(testToken)).StatusCode)

		// The login form: a wrong token, then the right one, which sets the session cookie.
		res = b.post("/login", url.Values{"token": {"nope"}, "next": {"/jobs"}})
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.Contains(t, res.body, "Wrong token")
		res = b.post("/login", url.Values{"token": {testToken}, "next": {"/jobs"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		assert.Equal(t, "/jobs", res.Header.Get("Location"))
		var session *http.Cookie
		for _, ck := range res.Cookies() {
			if ck.Name == sessionCookie {
				session = ck
			}
		}
		require.NotNil(t, session)
		assert.True(t, session.HttpOnly)
		assert.Equal(t, http.SameSiteStrictMode, session.SameSite)
		assert.NotContains(t, session.Value, testToken)
		res = b.get("/jobs")
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, res.body, "Log out")

		// A forged session value does not pass.
		other := newBrowser(t, Handler(c, Options{Token: testToken, Logger: quiet()}))
		assert.Equal(t, http.StatusUnauthorized, other.do(http.MethodGet, "/", nil,
			http.Header{"Cookie": {sessionCookie + "=9999999999.AAAA.AAAA"}}).StatusCode)

		// An open redirect is not possible through next.
		res = b.post("/login", url.Values{"token": {testToken}, "next": {"//evil.example/"}})
		assert.Equal(t, "/", res.Header.Get("Location"))

		res = b.post("/logout", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		assert.Equal(t, http.StatusUnauthorized, b.get("/jobs").StatusCode, "logged out")
	})

	t.Run("basic auth", func(t *testing.T) {
		const pass = "pa55-word-7c1e9a"
		b := newBrowser(t, Handler(c, Options{Username: "ops", Password: pass, Logger: quiet()}))
		res := b.get("/")
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.Contains(t, res.Header.Get("WWW-Authenticate"), `Basic realm="Queuety"`)
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, basic("ops", "wrong")).StatusCode)
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, basic("root", pass)).StatusCode)
		assert.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/", nil, bearer(pass)).StatusCode)
		assert.Equal(t, http.StatusOK, b.do(http.MethodGet, "/", nil, basic("ops", pass)).StatusCode)
		assert.Equal(t, http.StatusNotFound, b.do(http.MethodGet, "/login", nil, basic("ops", pass)).StatusCode, "no login form without a token")
	})

	t.Run("assets need no credentials", func(t *testing.T) {
		b := newBrowser(t, Handler(c, Options{Token: testToken, Logger: quiet()}))
		assert.Equal(t, http.StatusOK, b.get("/static/app.css").StatusCode)
	})
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func basic(user, pass string) http.Header {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header
}

// TestCSRF checks that an action needs its form's token and a same-origin
// request, and that a valid one changes the row.
func TestCSRF(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		b := newBrowser(t, Handler(c, open))
		b.get("/")
		token := b.csrf
		require.NotEmpty(t, token)

		form := func(extra url.Values) url.Values {
			v := url.Values{"queue": {"mail"}}
			for k, vals := range extra {
				v[k] = vals
			}
			return v
		}
		// No token, a wrong token, a token from another browser.
		res := b.do(http.MethodPost, "/queues/pause", form(nil), nil)
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		assert.Contains(t, res.body, "CSRF")
		res = b.do(http.MethodPost, "/queues/pause", form(url.Values{"csrf": {"AAAA"}}), nil)
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		other := newBrowser(t, Handler(c, open))
		res = other.do(http.MethodPost, "/queues/pause", form(url.Values{"csrf": {token}}), nil)
		assert.Equal(t, http.StatusForbidden, res.StatusCode, "a token is bound to its browser's cookie")
		// A valid token in a cross-site request.
		res = b.do(http.MethodPost, "/queues/pause", form(url.Values{"csrf": {token}}), http.Header{"Sec-Fetch-Site": {"cross-site"}})
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		assert.Contains(t, res.body, "Cross-site")
		res = b.do(http.MethodPost, "/queues/pause", form(url.Values{"csrf": {token}}), http.Header{"Origin": {"https://evil.example"}})
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		assert.Empty(t, pausedQueues(t, c), "no refused request paused the queue")

		// A valid, same-origin request.
		res = b.do(http.MethodPost, "/queues/pause", form(url.Values{"csrf": {token}, "back": {"/jobs?queue=mail"}}),
			http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {b.srv.URL}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
		assert.Equal(t, "/jobs?queue=mail", res.Header.Get("Location"))
		assert.Equal(t, []string{"mail"}, pausedQueues(t, c))
		res = b.get("/jobs?queue=mail")
		assert.Contains(t, res.body, "Queue mail paused", "the flash message")
		assert.NotContains(t, b.get("/").body, "Queue mail paused", "shown once")

		// The token also works in a header, for scripts.
		res = b.do(http.MethodPost, "/queues/resume", form(nil), http.Header{"X-CSRF-Token": {token}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		assert.Empty(t, pausedQueues(t, c))

		res = b.post(fmt.Sprintf("/jobs/%d/retry", f.buried), nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		assert.Equal(t, queuetytype.JobPending, jobStatus(t, c, f.buried))
	})
}

// TestReadOnly checks that a read-only UI shows no action and refuses
// every POST, even with a valid token.
func TestReadOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		f := seed(t, c)
		o := open
		o.ReadOnly = true
		b := newBrowser(t, Handler(c, o))
		for _, p := range []string{"/", "/jobs?status=buried", fmt.Sprintf("/jobs/%d", f.buried), fmt.Sprintf("/workflows/%d", f.waiting),
			fmt.Sprintf("/workflows/%d", f.failed), "/schedules"} {
			res := b.get(p)
			require.Equal(t, http.StatusOK, res.StatusCode, p)
			assert.NotContains(t, res.body, `method="post"`, "GET %s shows an action", p)
			assert.Contains(t, res.body, "read-only", p)
		}
		for _, p := range []string{"/queues/pause", fmt.Sprintf("/jobs/%d/retry", f.buried), fmt.Sprintf("/workflows/%d/cancel", f.waiting),
			fmt.Sprintf("/workflows/%d/signal", f.waiting), fmt.Sprintf("/schedules/%d/disable", f.schedule), "/jobs/retry-buried"} {
			res := b.do(http.MethodPost, p, url.Values{"queue": {"mail"}, "name": {"shipped"}}, nil)
			assert.Equal(t, http.StatusForbidden, res.StatusCode, p)
			assert.Contains(t, res.body, "read-only", p)
		}
		assert.Empty(t, pausedQueues(t, c))
		assert.Equal(t, queuetytype.JobBuried, jobStatus(t, c, f.buried))
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, workflowStatus(t, c, f.waiting))
		sc, err := c.ScheduleByID(t.Context(), f.schedule)
		require.NoError(t, err)
		assert.True(t, sc.Enabled)
	})
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/jobs?status=buried": "/jobs?status=buried", "/workflows/4": "/workflows/4", "/": "/",
		"": "/", "jobs": "/", "//evil.example/": "/", "/\\evil.example": "/", "/\t/evil.example": "/",
		"/\n/evil.example": "/", "https://evil.example/": "/", "/login": "/", "/login?next=/": "/",
	} {
		assert.Equal(t, want, safeNext(in), "%q", in)
	}
}
